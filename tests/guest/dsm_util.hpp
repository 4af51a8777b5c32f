// SPDX-License-Identifier: MIT
// Shared by the kernel DSM and user-level DSM guest tests: plain loads and
// stores the compiler keeps in program order, and three nodes with a
// session each.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <lite/session.hpp>
#include <memory>
#include <vector>

#include "util.hpp"

namespace lite_guest
{

inline void store(std::byte* p, uint64_t v)
{
    *reinterpret_cast<volatile uint64_t*>(p) = v; // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
    asm volatile("" ::: "memory");
}

inline uint64_t load(const std::byte* p)
{
    asm volatile("" ::: "memory");
    return *reinterpret_cast<const volatile uint64_t*>(p); // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

// Three nodes (a manager on @Port and two members) and a session on each.
template <uint16_t Port> class ThreeSessions : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dev_ = std::make_unique<lite::Device>(lite::Device::open());
        inst_ = three_nodes(*dev_, Port);
        for (uint32_t i : inst_)
            s_.push_back(lite::Session::open(i));
    }
    void TearDown() override
    {
        s_.clear();
        down_all(*dev_);
    }

    std::unique_ptr<lite::Device> dev_;
    std::vector<uint32_t> inst_;
    std::vector<lite::Session> s_;
};

} // namespace lite_guest

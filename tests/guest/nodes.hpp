// SPDX-License-Identifier: MIT
// A test fixture: three lite nodes (ids 1, 2, 3) in this guest, listening
// on kBasePort, kBasePort + 1 and kBasePort + 2; all taken down after.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <lite/lite.hpp>
#include <memory>
#include <vector>

#include "util.hpp"

namespace lite_guest
{

template <uint16_t kBasePort> class ThreeNodes : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dev_ = std::make_unique<lite::Device>(lite::Device::open());
        down_all(*dev_);
        auto a = up(*dev_, kBasePort, 0);
        auto b = up(*dev_, kBasePort + 1, kBasePort);
        auto c = up(*dev_, kBasePort + 2, kBasePort);
        ASSERT_EQ(a.node_id, 1u);
        ASSERT_EQ(b.node_id, 2u);
        ASSERT_EQ(c.node_id, 3u);
        inst_ = {a.instance, b.instance, c.instance};
    }
    void TearDown() override { down_all(*dev_); }

    std::unique_ptr<lite::Device> dev_;
    std::vector<uint32_t> inst_; // the instances of nodes 1, 2, 3
};

} // namespace lite_guest

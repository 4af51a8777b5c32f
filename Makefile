# SPDX-License-Identifier: GPL-2.0
# The front door. `make demo` shows lite working; `make check` proves it.
# Kernel version: discovered from the installed Debian kernel (tools/kver.sh).

KVER ?= $(shell tools/kver.sh 2>/dev/null)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= build/meson

.PHONY: all deps kmod kmod-check user test host-test guest-test check demo clean

all: kmod user

deps:
	@tools/deps.sh

kmod:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# W=1 and sparse (C=2): any warning fails the build.
kmod-check:
	@tools/kmod-check.sh $(KDIR)

$(BUILD)/build.ninja:
	meson setup $(BUILD)

user: $(BUILD)/build.ninja
	ninja -C $(BUILD)

host-test: user
	@tools/check.sh host

guest-test: kmod user
	@tools/check.sh guest

check: deps
	@tools/check.sh all

demo: deps kmod user
	@tools/demo.sh

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf build

/* SPDX-License-Identifier: GPL-2.0 */
/* Host stub: the E* values come from the uapi header of the same name. */
#include_next <linux/errno.h>

// SPDX-License-Identifier: MIT
// Built in the guest against the installed liblite-dev, with pkg-config:
// node A (instance argv[1]) allocates 64 KiB on node B (node id argv[2]),
// writes a pattern, reads it back and compares.
#include <lite/lite.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	static unsigned char out[65536], in[65536];
	lite_lmr_t lmr = 0;
	lite_t *l = NULL;
	size_t i;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s INSTANCE NODE\n", argv[0]);
		return 2;
	}
	for (i = 0; i < sizeof(out); i++)
		out[i] = (unsigned char)(i * 7 + 3);
	ret = LITE_open((unsigned int)atoi(argv[1]), &l);
	if (!ret)
		ret = LITE_alloc(l, sizeof(out), (uint32_t)atoi(argv[2]), &lmr);
	if (!ret)
		ret = LITE_write(l, lmr, 0, out, sizeof(out));
	if (!ret)
		ret = LITE_read(l, lmr, 0, in, sizeof(in));
	if (ret) {
		fprintf(stderr, "use_liblite: %s\n", strerror(-ret));
		return 1;
	}
	if (memcmp(in, out, sizeof(in))) {
		fprintf(stderr, "use_liblite: read back other bytes\n");
		return 1;
	}
	ret = LITE_free(l, lmr);
	LITE_close(l);
	printf("use_liblite: 64 KiB written to node %s and read back\n", argv[2]);
	return ret ? 1 : 0;
}

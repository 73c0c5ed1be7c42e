#!/bin/sh
# unit_ckpt_hash.t with the test hook STRATA_TEST_CKPT_HASH=generic: the
# libxxhash path of the checkpoint hash gives the same values too.
. "$top_srcdir/t/tap.sh"
STRATA_TEST_CKPT_HASH=generic exec "$top_builddir/t/unit_ckpt_hash.t"

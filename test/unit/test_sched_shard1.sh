#!/bin/sh
# make check: part 1 of 2 of test_sched (the parts run at once under make -j2; run
# test/unit/test_sched alone for everything in one process)
exec ./test/unit/test_sched 300 --shard 1/2

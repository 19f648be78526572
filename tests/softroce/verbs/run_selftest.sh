#!/usr/bin/env bash
# run_selftest.sh - boots the Soft-RoCE VM and runs gdrmesh_verbs_selftest in it (ctest
# `softroce` label): what the transport contract does not cover (multi-QP, bidirectional,
# timed runs, inline, rdma_cm, loopback, GID choice, port down). Exit 0: every case passed;
# 77: skipped; anything else: failed (see run_in_vm.sh).
# Usage: run_selftest.sh SELFTEST_BINARY [WORKDIR] [-- SELFTEST_ARGS...]
exec "$(dirname "${BASH_SOURCE[0]}")/run_in_vm.sh" guest_selftest.sh verbs_selftest.txt \
    '^SUMMARY .* failed=0' "$@"

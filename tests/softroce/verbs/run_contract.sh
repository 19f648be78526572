#!/usr/bin/env bash
# run_contract.sh - boots the Soft-RoCE VM and runs gdrmesh_verbs_contract_test in it: the
# transport contract suite (tests/unit/emulated/transport_contract.h) against the verbs
# transport on rxe (ctest `softroce` label). Exit 0: every case passed; 77: skipped; anything
# else: failed (see run_in_vm.sh). GDRMESH_TEST_TIME_SCALE (default here 3: TCG emulation on a
# loaded machine) stretches the contract's time limits.
# Usage: run_contract.sh CONTRACT_BINARY [WORKDIR] [-- GTEST_ARGS...]
export GDRMESH_TEST_TIME_SCALE="${GDRMESH_TEST_TIME_SCALE:-3}"
exec "$(dirname "${BASH_SOURCE[0]}")/run_in_vm.sh" guest_contract.sh verbs_contract.txt \
    '^\[  PASSED  \] [1-9][0-9]* test' "$@"

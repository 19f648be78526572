# shellcheck shell=sh
# guest_selftest.sh - runs gdrmesh_verbs_selftest inside tests/softroce/vm.sh (guest side).
# rxe1 (veth1) initiates towards rxe0 (veth0); rxe2 (dummy0) is the loopback pair.
# TEST_ARGS adds arguments (e.g. --quick, --only write).
# shellcheck disable=SC2086
gdrmesh_verbs_selftest --init-dev "${RXE_B:-rxe1}" --target-dev "${RXE_A:-rxe0}" \
    --loop-dev "${RXE_LO:-rxe2}" --down-if veth1 ${TEST_ARGS:-} >/tmp/verbs_selftest.txt 2>&1
rc=$?
cat /tmp/verbs_selftest.txt
/opt/export /tmp/verbs_selftest.txt verbs_selftest.txt
exit $rc

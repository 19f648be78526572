# shellcheck shell=sh
# guest_contract.sh - runs gdrmesh_verbs_contract_test inside tests/softroce/vm.sh (guest side):
# rxe1 (veth1, RXE_B) initiates towards rxe0 (veth0, RXE_A). TEST_ARGS adds GoogleTest
# arguments (e.g. --gtest_filter=*Wrong*); GDRMESH_TEST_TIME_SCALE comes from the host.
export RXE_A="${RXE_A:-rxe0}" RXE_B="${RXE_B:-rxe1}" GDRMESH_VM=1
export GDRMESH_TEST_TIME_SCALE="${GDRMESH_TEST_TIME_SCALE:-1}"
# shellcheck disable=SC2086
gdrmesh_verbs_contract_test --gtest_output=xml:/tmp/verbs_contract.xml ${TEST_ARGS:-} \
    >/tmp/verbs_contract.txt 2>&1
rc=$?
cat /tmp/verbs_contract.txt
/opt/export /tmp/verbs_contract.txt verbs_contract.txt
[ -f /tmp/verbs_contract.xml ] && /opt/export /tmp/verbs_contract.xml verbs_contract.xml
exit $rc

package main

// policyChildArgv is the argv that runs the policy tests' child, a tool
// server as lenient as a real one can be (testdata/child/policy.go): it
// reads JSON values across lines, decodes them with encoding/json, runs
// tools by exact name from a fixed set, and ignores SIGHUP. It appends
// every raw line it reads to $AEGIS_TEST_LOG, and every tool it runs (or
// refuses as unknown) to $AEGIS_POLICY_EXEC, one JSON string a line:
// "ran:NAME" or "unknown:NAME".
func policyChildArgv() []string {
	return []string{"env", "AEGIS_POLICY_CHILD=tools", childBin}
}

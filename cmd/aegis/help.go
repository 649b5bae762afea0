package main

import _ "embed" // the long help texts, kept as the text they are

// The help texts of the commands with the most to say, in help/: each is
// printed as it is, after the command's synopsis and flags.
var (
	// verifyExamples is verify's --help after its flags.
	//go:embed help/verify.txt
	verifyExamples string
	// proveHelp is prove's --help after its synopsis.
	//go:embed help/prove.txt
	proveHelp string
	// wrapExamples is wrap's --help after its flags.
	//go:embed help/wrap.txt
	wrapExamples string
	// policyUsage is policy's --help, synopsis included.
	//go:embed help/policy.txt
	policyUsage string
	// configHelp is config's --help, synopsis included.
	//go:embed help/config.txt
	configHelp string
)

// Package gate is the contract between the relay, which records calls,
// and a policy, which decides them: the relay asks a Gate about the
// tools/calls of every frame that carries one before the frame may move,
// and records the Decision it gets. The package holds the types alone and
// imports nothing of aegis, so that a policy implements them without
// pulling in the relay, the journal or confinement (go list -deps).
//
// A Decision's zero value refuses: a decider that forgets to decide keeps
// the call from the child (Denied is the zero Verdict). The relay maps a
// Verdict to the intent's policy.verdict and, for a refusal, to the
// refusal frame's data.aegis.code (relay's package documentation, "Gating
// and refusals").
//
// The refusal codes (CodePolicyDenied and the rest) are spelled here too,
// beside the verdicts they follow from: the relay writes them, and a
// policy names them when it explains a rule (aegis policy explain).
package gate

package policy

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/aegisrelay/aegis/internal/gate"
)

// The variables a condition reads. Their names are part of the file
// format; mcp.tool.name, mcp.tool.arguments, mcp.tool.target and
// source.address are agentgateway's.
const (
	VarTool        = "mcp.tool.name"       // string: the decoded params.name
	VarArguments   = "mcp.tool.arguments"  // JSON value: params.arguments ({} when absent)
	VarTarget      = "mcp.tool.target"     // string: the server's name (wrap's --name)
	VarRevision    = "mcp.protocolVersion" // string: the revision the request declares, "" for none
	VarRound       = "mcp.round"           // int: the call's round (gate.Call.Round)
	VarCaller      = "caller.id"           // string: "token:<id>" or "none" over HTTP, "uid:<n>" over stdio
	VarTransport   = "caller.transport"    // string: "http" or "stdio"
	VarPeer        = "source.address"      // string: the HTTP client's address, "" over stdio
	transportStdio = "stdio"
)

// MaxCost bounds what one evaluation of one condition may cost, in CEL's
// cost units (about one per value visited, string compared or function
// called): a condition that goes over it refuses the call. It keeps a
// comprehension over a large argument from stalling the pump.
const MaxCost = 100_000

// maxWhen bounds a condition's text.
const maxWhen = 4 << 10

var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(VarTool, cel.StringType),
		cel.Variable(VarArguments, cel.DynType),
		cel.Variable(VarTarget, cel.StringType),
		cel.Variable(VarRevision, cel.StringType),
		cel.Variable(VarRound, cel.IntType),
		cel.Variable(VarCaller, cel.StringType),
		cel.Variable(VarTransport, cel.StringType),
		cel.Variable(VarPeer, cel.StringType),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		cel.ParserExpressionSizeLimit(maxWhen),
	)
})

// cond is a rule's compiled condition. Its program is safe for concurrent
// use.
type cond struct {
	text     string
	prg      cel.Program
	readArgs bool // the condition reads mcp.tool.arguments
}

// compileCond type-checks text as a condition: a CEL expression of type
// bool over the variables above. The error is the first problem, for a
// diagnostic.
func compileCond(text string) (*cond, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("empty condition")
	}
	if len(text) > maxWhen {
		return nil, fmt.Errorf("condition of %d bytes; at most %d", len(text), maxWhen)
	}
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(text)
	if iss != nil && iss.Err() != nil {
		e := iss.Errors()[0]
		msg := e.Message
		if loc := e.Location; loc != nil && loc.Line() > 0 {
			msg = fmt.Sprintf("%s (condition line %d, column %d)", msg, loc.Line(), loc.Column()+1)
		}
		if n := len(iss.Errors()) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more)", n)
		}
		return nil, errors.New(msg)
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, fmt.Errorf("the condition is of type %s; want bool (compare a value: x == true)", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(MaxCost), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, err
	}
	c := &cond{text: text, prg: prg}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == VarArguments {
			c.readArgs = true
		}
	}
	return c, nil
}

// vars is what a condition reads of one call: a cel Activation. args is
// read on first use (argsReader), for conditions that read it.
type vars struct {
	call   *gate.Call
	target string
	args   any
}

// ResolveName implements interpreter.Activation.
func (v *vars) ResolveName(name string) (any, bool) {
	c := v.call
	switch name {
	case VarTool:
		return string(c.Tool), true
	case VarArguments:
		return v.args, true
	case VarTarget:
		return v.target, true
	case VarRevision:
		if c.HasRevision {
			return string(c.Revision), true
		}
		return "", true
	case VarRound:
		return int64(c.Round), true
	}
	var cl gate.Caller
	if c.Caller != nil {
		cl = *c.Caller
	}
	switch name {
	case VarCaller:
		return cl.Principal, true
	case VarTransport:
		if cl.Transport == "" {
			return transportStdio, true
		}
		return cl.Transport, true
	case VarPeer:
		return cl.Peer, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (*vars) Parent() interpreter.Activation { return nil }

// eval evaluates the condition; an error (a missing key, a wrong type, the
// cost limit) is the reason the call is refused.
func (c *cond) eval(v *vars) (bool, error) {
	out, _, err := c.prg.Eval(v)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %s, not a bool", out.Type())
	}
	return bool(b), nil
}

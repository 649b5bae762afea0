package policy

import (
	"errors"
	"fmt"
	"math/bits"
	"net"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/aegisrelay/aegis/internal/gate"
)

// The variables a condition reads. Their names are part of the file
// format. mcp.tool.name, mcp.tool.arguments, mcp.tool.target,
// source.address and source.port are agentgateway's (its schema/cel.md),
// with its meanings; agentgateway has no name for the caller (its JWT
// claims, API keys and basic-auth users are other things), the revision
// or the round, so those are aegis's.
const (
	VarTool        = "mcp.tool.name"       // string: the decoded params.name
	VarArguments   = "mcp.tool.arguments"  // JSON value: params.arguments ({} when absent)
	VarTarget      = "mcp.tool.target"     // string: the server's name (wrap's --name)
	VarRevision    = "mcp.protocolVersion" // string: the revision the request declares, "" for none
	VarRound       = "mcp.round"           // int: the call's round (gate.Call.Round)
	VarCaller      = "caller.id"           // string: "token:<id>" or "none" over HTTP, "uid:<n>" over stdio
	VarTransport   = "caller.transport"    // string: "http" or "stdio"
	VarAddress     = "source.address"      // string: the HTTP client's IP address (a unix socket's path), "" over stdio
	VarPort        = "source.port"         // int: the HTTP client's port, 0 over stdio or a unix socket
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
		cel.Variable(VarAddress, cel.StringType),
		cel.Variable(VarPort, cel.IntType),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		cel.ParserExpressionSizeLimit(maxWhen),
	)
})

// cond is a rule's compiled condition. Its programs are safe for
// concurrent use.
//
// The cost limit is kept two ways. CEL's cost tracking counts the cost of
// an evaluation as it goes, and costs more than the evaluation of a short
// condition itself; so when the policy loads, CEL's static estimate bounds
// what the condition can cost over a call whose values (every string,
// list and map a condition reads, the arguments' included) are at most n
// bytes long, for n = fastMax. A call within that bound runs fast, the
// program without tracking, whose cost cannot reach MaxCost; any other
// runs prg, which tracks its cost and stops at MaxCost.
type cond struct {
	text     string
	prg      cel.Program // with cost tracking and the limit
	fast     cel.Program // without: only for calls of at most fastMax bytes
	fastMax  int         // 0: every call runs prg
	readArgs bool        // the condition reads mcp.tool.arguments
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
	if c.fastMax = fastBound(env, ast); c.fastMax > 0 {
		if c.fast, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err != nil {
			return nil, err
		}
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == VarArguments {
			c.readArgs = true
		}
	}
	return c, nil
}

// The values a condition reads, indexed in vars.vals.
const (
	iTool = iota
	iTarget
	iRevision
	iRound
	iCaller
	iTransport
	iAddress
	iPort
	nVals
)

// vars is what a condition reads of one call: a cel Activation. Each value
// is made on first use and kept for the call's other conditions; args is
// set by Decide (argsReader) before a condition that reads it runs. size
// bounds every value's length, for cond.fastMax.
type vars struct {
	call   *gate.Call
	target string
	args   ref.Val
	size   int
	vals   [nVals]ref.Val
}

// reset readies v for call c, keeping nothing of the call before.
func (v *vars) reset(c *gate.Call, target string) {
	*v = vars{call: c, target: target}
	if c == nil {
		return
	}
	v.size = max(len(c.Args), len(c.Tool), len(c.Revision), len(target))
	if cl := c.Caller; cl != nil {
		v.size = max(v.size, len(cl.Principal), len(cl.Transport), len(cl.Peer))
	}
}

// ResolveName implements interpreter.Activation.
func (v *vars) ResolveName(name string) (any, bool) {
	i := -1
	switch name {
	case VarArguments:
		return v.args, v.args != nil
	case VarTool:
		i = iTool
	case VarTarget:
		i = iTarget
	case VarRevision:
		i = iRevision
	case VarRound:
		i = iRound
	case VarCaller:
		i = iCaller
	case VarTransport:
		i = iTransport
	case VarAddress:
		i = iAddress
	case VarPort:
		i = iPort
	default:
		return nil, false
	}
	if v.vals[i] == nil {
		v.vals[i] = v.value(i)
	}
	return v.vals[i], true
}

// value makes value i of the call.
func (v *vars) value(i int) ref.Val {
	c := v.call
	var cl gate.Caller
	if c.Caller != nil {
		cl = *c.Caller
	}
	switch i {
	case iTool:
		return types.String(c.Tool)
	case iTarget:
		return types.String(v.target)
	case iRevision:
		if c.HasRevision {
			return types.String(c.Revision)
		}
		return types.String("")
	case iRound:
		return types.Int(c.Round)
	case iCaller:
		return types.String(cl.Principal)
	case iTransport:
		if cl.Transport == "" {
			return types.String(transportStdio)
		}
		return types.String(cl.Transport)
	case iAddress:
		host, _ := splitPeer(cl.Peer)
		return types.String(host)
	default: // iPort
		_, port := splitPeer(cl.Peer)
		return types.Int(port)
	}
}

// splitPeer splits a peer's "host:port" into its host (an IP address, as
// agentgateway's source.address is) and port. A peer of another shape (a
// unix socket's path) is its own host, port 0.
func splitPeer(peer string) (string, int64) {
	host, p, err := net.SplitHostPort(peer)
	if err != nil {
		return peer, 0
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return peer, 0
	}
	return host, int64(port)
}

// Parent implements interpreter.Activation.
func (*vars) Parent() interpreter.Activation { return nil }

// eval evaluates the condition; an error (a missing key, a wrong type, the
// cost limit) is the reason the call is refused.
func (c *cond) eval(v *vars) (bool, error) {
	prg := c.prg
	if c.fast != nil && v.size <= c.fastMax {
		prg = c.fast
	}
	out, _, err := prg.Eval(v)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %s, not a bool", out.Type())
	}
	return bool(b), nil
}

// maxFast is the largest call fastBound looks at: a call with a value
// longer than maxFast bytes has its conditions' cost tracked.
const maxFast = 16 << 20

// fastBound returns the largest n (a power of two, at most maxFast) for
// which CEL's static estimate of the condition's cost, over a call whose
// values are each at most n bytes long, is within MaxCost; 0 if there is
// none. A value's size as CEL counts it (a string's code points, a list's
// or map's entries) is at most its length in bytes in the line.
func fastBound(env *cel.Env, ast *cel.Ast) int {
	within := func(n int) bool {
		est, err := env.EstimateCost(ast, sizeBound(n))
		return err == nil && est.Max <= MaxCost
	}
	lo, hi := 0, bits.Len(maxFast)-1 // powers of two 2^lo .. 2^hi
	if !within(1 << lo) {
		return 0
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if within(1 << mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return 1 << lo
}

// sizeBound is a cost estimator that bounds every value a condition reads
// of the call (a variable, or a part of one, as CEL's cost paths name
// them) by its length in bytes. Values the condition computes are left
// to CEL's estimator, which sizes them from their operands, or leaves
// them unbounded (then the estimate is too, and the cost is tracked).
type sizeBound uint64

func (n sizeBound) EstimateSize(e cost.AstNode) *cost.SizeEstimate {
	p := e.Path()
	if len(p) == 0 || !isVarPath(p[0]) {
		return nil
	}
	return &cost.SizeEstimate{Min: 0, Max: uint64(n)}
}

func (sizeBound) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	return nil
}

// isVarPath reports whether a cost path's first element names one of the
// variables (or its first segment: mcp.tool.arguments.path's path may
// begin with "mcp"). A comprehension's variable is never this: CEL's
// cost paths resolve it to the path of the range it iterates.
func isVarPath(root string) bool {
	switch root {
	case VarTool, VarArguments, VarTarget, VarRevision, VarRound, VarCaller, VarTransport, VarAddress, VarPort,
		"mcp", "caller", "source":
		return true
	}
	return false
}

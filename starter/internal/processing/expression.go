package processing

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// maxExpressionBytes bounds an expression's source: the config is read
// once, but the fuzz tests and a generated config must not make the
// compiler's work unbounded either.
const maxExpressionBytes = 4096

// expression is a compiled expression over the event's fields: `payload`,
// `_file`, `_line` and every other top-level key are variables; a key the
// event lacks is nil.
type expression struct {
	src  string
	prog *vm.Program
	// vm is reused from one event to the next (its stack and scopes are
	// kept), as a chain runs on one goroutine.
	vm vm.VM
	// reads is what the expression reads of an event, so a boolean one
	// runs on the tagged model without building the map model; nil when
	// it may read the whole environment.
	reads *reads
	// eq, when set, is the expression as a string comparison.
	eq *stringTest
}

// ExprError is an expression that does not compile: Column (1-based,
// counted in characters) is where in the expression's own text.
type ExprError struct {
	Line, Column int
	Msg          string
}

func (e *ExprError) Error() string {
	if e.Line > 1 {
		return fmt.Sprintf("expression line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("expression column %d: %s", e.Column, e.Msg)
}

// compileExpr compiles src; asBool wants a boolean result (drop, keep,
// unless), which is checked at compile time when the types tell and at
// run time otherwise.
func compileExpr(src string, asBool bool) (*expression, error) {
	if src == "" {
		return nil, errors.New("empty expression")
	}
	if len(src) > maxExpressionBytes {
		return nil, fmt.Errorf("expression of %d bytes; at most %d", len(src), maxExpressionBytes)
	}
	if !utf8.ValidString(src) {
		return nil, errors.New("expression is not valid UTF-8")
	}
	opts := []expr.Option{expr.Env(map[string]any{}), expr.AllowUndefinedVariables()}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, &ExprError{Line: fe.Line, Column: fe.Column + 1, Msg: fe.Message}
		}
		return nil, fmt.Errorf("expression: %w", err)
	}
	x := &expression{src: src, prog: prog, reads: exprReads(prog.Node())}
	if asBool {
		x.eq = stringTestOf(prog.Node())
	}
	return x, nil
}

// eval runs the expression on the event's fields.
func (x *expression) eval(fields map[string]any) (any, error) {
	return x.vm.Run(x.prog, fields)
}

// test runs a boolean expression; a result that is not a boolean is an
// error.
func (x *expression) test(fields map[string]any) (bool, error) {
	return x.result(x.eval(fields))
}

// testNode is test on an event in the tagged model, whose environment
// holds only what the expression reads (x.reads must not be nil).
func (x *expression) testNode(top *node) (bool, error) {
	if x.eq != nil {
		if ok, done := x.eq.test(top); done {
			return ok, nil
		}
	}
	return x.result(x.vm.Run(x.prog, x.reads.docEnv(top)))
}

func (x *expression) result(v any, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("expression gave %T, want a boolean", v)
	}
	return b, nil
}

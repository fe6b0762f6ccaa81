package sql

import (
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// CREATE FUNCTION and DROP FUNCTION, in PostgreSQL's syntax: the clauses
// after the signature come in any order.

// functionClauses are the words that start a clause of CREATE FUNCTION
// after RETURNS: an AS or RETURN expression runs up to the next one.
var functionClauses = setOf(`language as return with immutable stable volatile strict called returns
parallel leakproof not security cost rows set window support transform external`)

func (p *stmtParser) createFunction() (Statement, error) {
	cf := &CreateFunction{OrReplace: p.accept("or", "replace")}
	if err := p.expect("function"); err != nil {
		return nil, err
	}
	name, err := p.objectName()
	if err != nil {
		return nil, err
	}
	cf.Name = name
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if !p.acceptOp(")") {
		if cf.Args, err = p.funcArgs(true); err != nil {
			return nil, err
		}
	}
	if err := p.expect("returns"); err != nil {
		return nil, err
	}
	if p.accept("table") {
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		if cf.Table, err = p.funcArgs(false); err != nil {
			return nil, err
		}
	} else {
		if p.peek().is("setof") {
			return nil, notSupportedAt(p.src, p.peek().pos, "RETURNS SETOF (use RETURNS TABLE (…))")
		}
		t, err := p.funcType()
		if err != nil {
			return nil, err
		}
		cf.Returns = &t
	}
	seenBody := false
	for p.i < len(p.toks) && !p.peek().isOp(";") {
		at := p.peek()
		switch {
		case p.accept("language"):
			t := p.peek()
			if t.kind != tIdent && t.kind != tQIdent && t.kind != tString {
				return nil, p.fail()
			}
			p.i++
			cf.Language = strings.ToLower(t.val)
		case p.peek().is("as") || p.peek().is("return"):
			if seenBody {
				return nil, syntaxErrorAt(p.src, at)
			}
			seenBody = true
			if err := p.functionBody(cf); err != nil {
				return nil, err
			}
		case p.peek().is("with") && p.tok(p.i+1).isOp("("):
			if cf.Options, err = p.options(cf.Options); err != nil {
				return nil, err
			}
		case p.accept("immutable"), p.accept("stable"), p.accept("volatile"):
			cf.Volatility = at.val
		case p.accept("strict"), p.accept("returns", "null", "on", "null", "input"):
			cf.Strict = true
		case p.accept("called", "on", "null", "input"):
			cf.Strict = false
		case p.accept("not", "leakproof"), p.accept("leakproof"):
		case p.accept("parallel"):
			if !p.accept("safe") && !p.accept("restricted") && !p.accept("unsafe") {
				return nil, p.fail()
			}
		case p.accept("security"):
			if !p.accept("invoker") && !p.accept("definer") {
				return nil, p.fail()
			}
		case p.accept("cost"), p.accept("rows"):
			if p.peek().kind != tNumber {
				return nil, p.fail()
			}
			p.i++
		default:
			return nil, p.fail()
		}
	}
	if !seenBody {
		return nil, pgerror.New(pgerror.InvalidFunctionDefinition, "no function body specified")
	}
	if cf.Language == "" {
		return nil, pgerror.New(pgerror.InvalidFunctionDefinition, "no language specified").
			WithHint("fvsql runs LANGUAGE wasm and LANGUAGE sql.")
	}
	return cf, p.end()
}

// funcArgs reads the arguments ([name] type, …) or, named, the columns
// of RETURNS TABLE, and the closing parenthesis. An argument is a type
// alone when the words read as a type end it; else its first word is
// its name.
func (p *stmtParser) funcArgs(optionalNames bool) ([]FuncArg, error) {
	var out []FuncArg
	for {
		p.accept("in") // the only argument mode
		var a FuncArg
		named := true
		if save := p.i; optionalNames {
			if t, err := p.funcType(); err == nil && (p.peek().isOp(",") || p.peek().isOp(")")) {
				a.FuncType, named = t, false
			} else {
				p.i = save
			}
		}
		if named {
			name, err := p.name()
			if err != nil {
				return nil, err
			}
			t, err := p.funcType()
			if err != nil {
				return nil, err
			}
			a = FuncArg{Name: name, FuncType: t}
		}
		out = append(out, a)
		if p.acceptOp(",") {
			continue
		}
		return out, p.expectOp(")")
	}
}

func (p *stmtParser) funcType() (FuncType, error) {
	at := p.peek()
	name, next, err := readTypeName(p.src, p.toks, p.i, len(p.toks), p.after)
	if err != nil {
		return FuncType{}, err
	}
	p.i = next
	t, err := types.Parse(name)
	if err != nil {
		return FuncType{}, pgerror.WithPosition(err, runePos(p.src, at.pos))
	}
	return FuncType{Type: t, TypeName: name}, nil
}

// functionBody reads AS 'body' (a string constant, $$…$$ included), AS
// expr (a module's bytes), or RETURN expr.
func (p *stmtParser) functionBody(cf *CreateFunction) error {
	ret := p.accept("return")
	if !ret {
		p.i++ // as
	}
	lo, depth := p.i, 0
	for ; p.i < len(p.toks); p.i++ {
		t := p.toks[p.i]
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth == 0 && p.i > lo && (t.kind == tIdent && functionClauses[t.val] || t.isOp(";")):
			goto done
		}
	}
done:
	hi := p.i
	if lo == hi {
		return p.failAt(lo)
	}
	if ret {
		cf.Return = true
		cf.Body = "SELECT " + p.src[p.toks[lo].pos:p.toks[hi-1].end]
		return nil
	}
	if hi == lo+1 && p.toks[lo].kind == tString {
		cf.Body = p.toks[lo].val
		return nil
	}
	e, n, err := parseExprUnit(p.unit(lo, hi))
	if err != nil {
		return err
	}
	cf.BodyExpr, cf.NumParams = e, n
	return nil
}

func (p *stmtParser) dropFunction() (Statement, error) {
	d := &DropFunction{IfExists: p.accept("if", "exists")}
	for {
		name, err := p.objectName()
		if err != nil {
			return nil, err
		}
		ref := FuncRef{Name: name}
		if p.acceptOp("(") {
			ref.HasArgs = true
			if !p.acceptOp(")") {
				args, err := p.funcArgs(true)
				if err != nil {
					return nil, err
				}
				for _, a := range args {
					ref.Args = append(ref.Args, a.FuncType)
				}
			}
		}
		d.Funcs = append(d.Funcs, ref)
		if !p.acceptOp(",") {
			break
		}
	}
	if !p.accept("cascade") {
		p.accept("restrict")
	}
	return d, p.end()
}

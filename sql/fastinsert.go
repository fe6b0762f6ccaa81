package sql

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/types"
)

// fastInsert recognises the statement bulk loaders send most, INSERT INTO
// name [(col, …)] VALUES (literal, …), … with constants only (numbers,
// strings, NULL, TRUE, FALSE, a minus before a number), and builds its AST
// straight from the tokens. It gives the same AST the TiDB route gives
// (TestFastInsertMatchesParser holds it to that) at a fraction of the cost;
// anything else (expressions, casts, DEFAULT, INSERT … SELECT, a syntax
// error) returns false and takes the general route, which owns the errors.
func (p *stmtParser) fastInsert() (*Insert, bool) {
	toks := p.toks
	i := 0
	next := func() token {
		if i < len(toks) {
			i++
			return toks[i-1]
		}
		return token{kind: tEOF}
	}
	peek := func() token {
		if i < len(toks) {
			return toks[i]
		}
		return token{kind: tEOF}
	}
	if !next().is("insert") || !next().is("into") {
		return nil, false
	}
	name, ok := identName(next())
	if !ok {
		return nil, false
	}
	ins := &Insert{Table: &TableName{Name: name}}
	if peek().isOp(".") {
		next()
		if ins.Table.Name, ok = identName(next()); !ok {
			return nil, false
		}
		ins.Table.Schema = name
	}
	if peek().isOp("(") {
		next()
		for {
			col, ok := identName(next())
			if !ok {
				return nil, false
			}
			ins.Columns = append(ins.Columns, col)
			if t := next(); t.isOp(")") {
				break
			} else if !t.isOp(",") {
				return nil, false
			}
		}
	}
	if !next().is("values") {
		return nil, false
	}
	width := -1
	for {
		if !next().isOp("(") {
			return nil, false
		}
		row := make([]Expr, 0, max(width, 1))
		for {
			v, ok := fastLiteral(next, peek)
			if !ok {
				return nil, false
			}
			row = append(row, &Literal{Value: v})
			if t := next(); t.isOp(")") {
				break
			} else if !t.isOp(",") {
				return nil, false
			}
		}
		width = len(row)
		ins.Values = append(ins.Values, row)
		if i == len(toks) {
			return ins, true
		}
		if !next().isOp(",") {
			return nil, false
		}
	}
}

// identName is the name an identifier token denotes, if it is one that may
// name a relation or a column without quoting (keywords that the general
// route treats specially are left to it).
func identName(t token) (string, bool) {
	switch t.kind {
	case tQIdent:
		return t.val, t.val != ""
	case tIdent:
		switch t.val {
		case "values", "select", "default", "null", "true", "false", "with", "table", "on", "returning":
			return "", false
		}
		return t.val, true
	}
	return "", false
}

// fastLiteral reads one constant, typed as literal() types TiDB's.
func fastLiteral(next, peek func() token) (types.Value, bool) {
	t := next()
	neg := false
	if t.isOp("-") { // a unary + stays an operator on the general route
		neg = true
		if peek().kind != tNumber {
			return types.Value{}, false
		}
		t = next()
	}
	switch t.kind {
	case tNumber:
		v, ok := numberValue(t.val)
		if ok && neg {
			v, ok = negate(v)
		}
		return v, ok
	case tString:
		return types.NewString(types.Unknown, t.val), true
	case tIdent:
		switch t.val {
		case "null":
			return types.NullValue, true
		case "true":
			return types.NewBool(true), true
		case "false":
			return types.NewBool(false), true
		}
	}
	return types.Value{}, false
}

// numberValue types a numeric constant's decimal text: an integer that
// fits is Int4 or Int8, anything else Numeric.
func numberValue(s string) (types.Value, bool) {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return intLiteral(n), true
		}
	}
	if strings.ContainsAny(s, "eE") {
		// TiDB reads an exponent as a double and keeps its shortest
		// text; leave that conversion to the general route.
		return types.Value{}, false
	}
	v, err := types.ParseText(types.Numeric, s)
	return v, err == nil
}

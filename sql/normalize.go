package sql

import (
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// The normalizer rewrites the tokens of one PostgreSQL statement (or
// expression) into text that TiDB's MySQL grammar parses with the same
// meaning, remembering for every output token the source offset it came
// from. Constructs TiDB lacks become calls of synthetic functions
// (__fvsql_cast, __fvsql_interval, …) or marker syntax that the converter
// recognises and turns back into sql's AST; see doc.go for the list.

// Synthetic names shared by the normalizer and the converter.
const (
	fnCast         = "__fvsql_cast"
	fnInterval     = "__fvsql_interval"
	fnNum          = "__fvsql_num"
	fnExtract      = "__fvsql_extract"
	fnFilter       = "__fvsql_filter"
	fnOver         = "__fvsql_over" // f(…) OVER w of an aggregate TiDB takes no OVER after
	fnNullsFirst   = "__fvsql_nulls_first"
	fnNullsLast    = "__fvsql_nulls_last"
	colStar        = "__fvsql_star"
	tvfPrefix      = "__fvsql_tvf_"
	aliasPrefix    = "__fvsql_alias_"        // a FROM alias with a column list
	fnArray        = "__fvsql_array"         // ARRAY[…]
	fnArraySub     = "__fvsql_array_sub"     // ARRAY(subquery)
	fnSubscript    = "__fvsql_subscript"     // x[i]
	fnSlice        = "__fvsql_slice"         // x[lo:hi]
	fnField        = "__fvsql_field"         // (x).field
	fnAggOrder     = "__fvsql_aggorder"      // agg(args ORDER BY keys)
	fnWithinGroup  = "__fvsql_withingroup"   // agg(args) WITHIN GROUP (ORDER BY keys)
	fnDistinctOn   = "__fvsql_distinct_on"   // SELECT DISTINCT ON (keys): a first select item
	fnDesc         = "__fvsql_desc"          // a DESC key of fnAggOrder
	fnDistinctAgg  = "__fvsql_distinct"      // agg(DISTINCT …) of an aggregate TiDB does not know
	colOmitted     = "__fvsql_omitted"       // an omitted slice bound
	fnAny          = "__fvsql_any"           // op ANY (array)
	fnAll          = "__fvsql_all"           // op ALL (array)
	fnRollup       = "__fvsql_rollup"        // GROUP BY ROLLUP (…)
	fnCube         = "__fvsql_cube"          // GROUP BY CUBE (…)
	fnGroupingSets = "__fvsql_grouping_sets" // GROUP BY GROUPING SETS (…)
	fnEmptySet     = "__fvsql_empty_set"     // () in GROUPING SETS
	fnJSONOp       = "__fvsql_jsonop_"       // x -> y, x ->> y, x #> y, x #>> y: a prefix of jsonOps' names
	// noLimit stands for "no LIMIT" when only OFFSET was written, since
	// TiDB needs a count before OFFSET.
	noLimit = "18446744073709551615"
)

// okind classifies output tokens for the backward scans that find the
// operand of a postfix construct (::type, FILTER, AT TIME ZONE).
type okind uint8

const (
	oOther   okind = iota
	oName          // identifier (possibly a function name)
	oValue         // literal, parameter
	oKeyword       // reserved word
	oOpen          // (
	oClose         // )
)

// otok is one output token.
type otok struct {
	text  string
	pos   int // byte offset of the source token it stands for
	kind  okind
	param int // $n for a "?" token
}

// frame is the state of one parenthesis level (the top level included).
type frame struct {
	clause     string // the last clause keyword seen at this level
	orderStart int    // index in out where the current ORDER BY item starts, or -1
	call       int    // for a function call's parenthesis, the index in out of its name; else -1
	aggOrder   bool   // the call's arguments ended at ORDER BY: its sort keys follow
}

// tvfSpan is a function call found in FROM (a window TVF or a
// set-returning function), kept for separate parsing.
type tvfSpan struct {
	kind       string   // tumble, hop, session, or "function"
	name       string   // the function's name (lower case, schema removed)
	pos        int      // source offset of the name
	args       [][2]int // token index ranges of the arguments
	ordinality bool     // WITH ORDINALITY
	cols       []string // column aliases: AS t(a, b)
}

// aliasSpan is a FROM item's alias with a column list, AS x(a, b) after a
// relation or a subquery, which TiDB does not parse: the normalizer puts
// a synthetic alias in its place, and the converter the columns back.
type aliasSpan struct {
	alias string
	cols  []string
}

// normalized is the normalizer's result.
type normalized struct {
	text     string
	outPos   []int       // byte offset in text of each output token
	srcPos   []int       // source offset of each output token
	params   map[int]int // byte offset of a "?" in text -> its $n
	emit     EmitMode
	tvfs     []tvfSpan
	aliases  []aliasSpan
	maxParam int
	end      int    // source offset of the end of the normalized range
	exprs    []Expr // parsed on their own; a "?" whose $n is -(i+1) stands for exprs[i]
	// fromNames is the source offset of the first word of each name in a
	// FROM clause, for the positions of errors about relations (TiDB
	// keeps no offsets of table names).
	fromNames map[string]int
}

type normalizer struct {
	src       string
	toks      []token
	after     token // what follows toks: ";" or ")" of the statement, or EOF
	out       []otok
	frames    []frame
	emit      EmitMode
	tvfs      []tvfSpan
	aliases   []aliasSpan
	exprs     []Expr // see normalized.exprs
	fromNames map[string]int
	max       int
	floor     int         // len(frames) when the innermost run began
	closers   map[int]int // input index of a ")" -> extra ")" to emit after it
	lastCall  int         // the index in out of the name of the call the last ")" closed, or -1
	before    map[int]int // input index -> ")" to emit before it (|| operands)
}

// normalize rewrites the tokens of u. A non-empty prefix ("SELECT " for
// an expression) is emitted first.
func normalize(u unit, prefix string) (*normalized, error) {
	n := &normalizer{src: u.src, toks: u.toks, after: u.after, out: make([]otok, 0, len(u.toks)+8), lastCall: -1}
	n.frames = append(n.frames, frame{orderStart: -1, call: -1})
	if prefix != "" {
		n.put(prefix, n.at(0, len(n.toks)).pos, oKeyword)
	}
	if err := n.run(0, len(n.toks)); err != nil {
		return nil, err
	}
	return n.render(), nil
}

func (n *normalizer) render() *normalized {
	r := &normalized{emit: n.emit, tvfs: n.tvfs, aliases: n.aliases, maxParam: n.max, end: n.after.pos, exprs: n.exprs, fromNames: n.fromNames}
	var sb strings.Builder
	size := 0
	for _, t := range n.out {
		size += len(t.text) + 1
	}
	sb.Grow(size)
	r.outPos = make([]int, len(n.out))
	r.srcPos = make([]int, len(n.out))
	for i, t := range n.out {
		if i > 0 && spaceBetween(n.out[i-1].text, t.text) {
			sb.WriteByte(' ')
		}
		r.outPos[i] = sb.Len()
		r.srcPos[i] = t.pos
		if t.text == "?" && t.kind == oValue {
			if r.params == nil {
				r.params = make(map[int]int)
			}
			r.params[sb.Len()] = t.param
		}
		sb.WriteString(t.text)
	}
	r.text = sb.String()
	return r
}

// spaceBetween decides whether two output tokens need a space. A name and
// its "(" must touch: without MySQL's IGNORE_SPACE mode, TiDB only reads
// count(…), now() and friends as built-ins when they do.
func spaceBetween(prev, next string) bool {
	switch next {
	case "(", ")", ",", ".":
		return false
	}
	return prev != "(" && prev != "."
}

// srcOffset maps a byte offset of the normalized text to the source.
func (r *normalized) srcOffset(off int) int {
	i := sort.Search(len(r.outPos), func(i int) bool { return r.outPos[i] > off }) - 1
	if i < 0 {
		return r.end
	}
	return r.srcPos[i]
}

// at returns token i of the range ending at hi, or the token after it.
func (n *normalizer) at(i, hi int) token {
	if i < hi {
		return n.toks[i]
	}
	if hi < len(n.toks) {
		return n.toks[hi]
	}
	return n.after
}

func (n *normalizer) frame() *frame { return &n.frames[len(n.frames)-1] }

func (n *normalizer) put(text string, pos int, kind okind) {
	n.out = append(n.out, otok{text: text, pos: pos, kind: kind})
}

// open emits a "(" whose ")" the main loop will see.
func (n *normalizer) open(pos int) {
	call := -1
	if k := len(n.out) - 1; k >= 0 && n.out[k].kind == oName && !strings.EqualFold(n.out[k].text, "over") {
		for call = k; call >= 2 && n.out[call-1].text == "." && n.out[call-2].kind == oName; call -= 2 {
		}
	}
	n.put("(", pos, oOpen)
	n.frames = append(n.frames, frame{orderStart: -1, call: call})
}

func (n *normalizer) run(lo, hi int) error {
	// A ")" in [lo, hi) closes a "(" in it: one that would close a frame
	// opened before this run (an unbalanced ")" inside brackets or a
	// call's arguments) is a syntax error, not a frame popped twice.
	defer func(floor int) { n.floor = floor }(n.floor)
	n.floor = len(n.frames)
	for i := lo; i < hi; {
		n.closeBefore(i)
		next, err := n.step(i, hi)
		if err != nil {
			return err
		}
		i = next
	}
	n.closeBefore(hi)
	return nil
}

func (n *normalizer) closeBefore(i int) {
	if k := n.before[i]; k > 0 {
		delete(n.before, i)
		for ; k > 0; k-- {
			n.put(")", n.at(i, i).pos, oClose)
		}
	}
}

// step emits token i (and whatever construct starts there) and returns
// the index of the next unprocessed token.
func (n *normalizer) step(i, hi int) (int, error) {
	t := n.toks[i]
	switch t.kind {
	case tParam:
		n.out = append(n.out, otok{text: "?", pos: t.pos, kind: oValue, param: t.n})
		n.max = max(n.max, t.n)
	case tString:
		if n.operandEnds() && n.last().text != "escape" {
			// 'a' 'b' and x 'alias' are MySQL, not PostgreSQL.
			return 0, syntaxErrorAt(n.src, t)
		}
		if n.last().text == "escape" && len(t.val) > 1 {
			// TiDB takes one byte: PostgreSQL's error for more than one
			// character, an honest 0A000 for one that is not ASCII.
			if utf8.RuneCountInString(t.val) > 1 {
				return 0, pgerror.WithPosition(pgerror.New(pgerror.InvalidEscapeSequence, "invalid escape string").
					WithHint("Escape string must be empty or one character."), runePos(n.src, t.pos))
			}
			return 0, notSupportedAt(n.src, t.pos, "a non-ASCII ESCAPE character")
		}
		n.put(quoteString(t.val), t.pos, oValue)
	case tBits:
		return 0, notSupportedAt(n.src, t.pos, "bit string constants")
	case tBytes:
		n.synthCall(fnCast, t.pos, quoteString(`\x`+hex.EncodeToString([]byte(t.val))), "'bytea'")
	case tNumber:
		if strings.ContainsAny(t.val, "eE") {
			// TiDB reads 1e3 as a float; keep the digits exact for numeric.
			n.synthCall(fnNum, t.pos, quoteString(t.val))
		} else {
			n.put(t.val, t.pos, oValue)
		}
	case tQIdent:
		n.put(quoteIdent(t.val), t.pos, oName)
	case tOp:
		return n.opStep(i, hi)
	case tIdent:
		return n.wordStep(i, hi)
	}
	return i + 1, nil
}

// synthCall emits name(args…) as one primary.
func (n *normalizer) synthCall(name string, pos int, args ...string) {
	n.put(name, pos, oName)
	n.put("(", pos, oOpen)
	for k, a := range args {
		if k > 0 {
			n.put(",", pos, oOther)
		}
		n.put(a, pos, oValue)
	}
	n.put(")", pos, oClose)
}

func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// ---------------------------------------------------------------------------
// Operators and punctuation.

// passOps are operators whose meaning TiDB shares (with the converter
// mapping ^ back from XOR to power).
var passOps = setOf(`+ - * / % ^ || = <> != < <= > >= & | << >> , . :: ( ) ~ ~* !~ !~* ~~ !~~ ~~* !~~*`)

// jsonOps are the jsonb operators, each rewritten as a call named
// fnJSONOp and its name here, which the converter makes a Binary again.
var jsonOps = map[string]string{"->": "get", "->>": "gettext", "#>": "path", "#>>": "pathtext",
	"@>": "contains", "<@": "containedby", "?": "exists", "?|": "existsany", "?&": "existsall", "#-": "deletepath"}

// jsonOp rewrites `x -> y` (and ->>, #>, #>>) as a call of x and y. The
// left operand is the primary before it (a column, a call, a cast, a
// parenthesized expression, an operator of its kind before: they are
// left associative); the right one the primary after it with its casts,
// which bind tighter, as in PostgreSQL. Both sit above the comparisons
// and below the arithmetic operators there, which only matters for
// operands PostgreSQL would refuse (jsonb has no + or *).
func (n *normalizer) jsonOp(i, hi int) (int, error) {
	t := n.toks[i]
	start := n.primaryStart()
	end := n.operandEnd(i+1, hi)
	if start < 0 || end < 0 {
		return 0, syntaxErrorAt(n.src, t)
	}
	n.wrapOpen(start, fnJSONOp+jsonOps[t.val], t.pos)
	n.put(",", t.pos, oOther)
	if n.before == nil {
		n.before = make(map[int]int)
	}
	n.before[end]++
	return i + 1, nil
}

// operandEnd is where the primary starting at input token i ends (with
// its casts): a literal or parameter (signed), a name, a qualified name,
// a call, a parenthesized expression or ARRAY[…]; -1 if none starts
// there.
func (n *normalizer) operandEnd(i, hi int) int {
	k := i
	if n.at(k, hi).isOp("-") || n.at(k, hi).isOp("+") {
		k++
	}
	switch t := n.at(k, hi); {
	case k >= hi:
		return -1
	case t.isOp("("):
		if k = n.match(k, hi); k < 0 {
			return -1
		}
		k++
	case t.kind == tIdent && t.val == "array" && n.at(k+1, hi).isOp("["):
		if k = n.matchBracket(k+1, hi); k < 0 {
			return -1
		}
		k++
	case t.kind == tIdent || t.kind == tQIdent:
		k++
		for n.at(k, hi).isOp(".") && k+1 < hi && (n.at(k+1, hi).kind == tIdent || n.at(k+1, hi).kind == tQIdent) {
			k += 2
		}
		if k < hi && n.at(k, hi).isOp("(") {
			if k = n.match(k, hi); k < 0 {
				return -1
			}
			k++
		}
	case t.kind == tOp || t.kind == tEOF:
		return -1
	default: // a literal or a parameter
		k++
	}
	for k < hi && n.at(k, hi).isOp("::") {
		_, next, err := n.typeName(k+1, hi)
		if err != nil {
			return -1
		}
		k = next
	}
	return k
}

func (n *normalizer) opStep(i, hi int) (int, error) {
	t := n.toks[i]
	if _, ok := jsonOps[t.val]; ok {
		return n.jsonOp(i, hi)
	}
	if !passOps[t.val] {
		switch t.val {
		case "[":
			return n.subscript(i, hi)
		case "]":
			return 0, syntaxErrorAt(n.src, t)
		case ":", ":=", "=>", ";":
			return 0, syntaxErrorAt(n.src, t)
		}
		return 0, notSupportedAt(n.src, t.pos, "operator "+strconv.Quote(t.val))
	}
	switch t.val {
	case "(":
		if n.at(i+1, hi).isOp(")") && n.last().kind != oName && (n.inGroupingSets() || (n.frame().clause == "group" && n.groupItemStart())) {
			// () in GROUPING SETS, or an item of GROUP BY: the empty
			// grouping set (not a call's empty argument list)
			n.synthCall(fnEmptySet, t.pos)
			return i + 2, nil
		}
		if n.at(i+1, hi).isOp("*") && n.at(i+2, hi).isOp(")") && n.last().kind == oName {
			// f(*): TiDB turns count(*) into count(1); keep the star.
			n.put("(", t.pos, oOpen)
			n.put(colStar, n.toks[i+1].pos, oName)
			n.put(")", n.toks[i+2].pos, oClose)
			return i + 3, nil
		}
		n.open(t.pos)
		if f := n.frame(); f.call >= 0 && n.at(i+1, hi).is("distinct") && !tidbDistinctAggs[strings.ToLower(n.out[len(n.out)-2].text)] {
			// f(DISTINCT …) of an aggregate TiDB's grammar does not know
			// (string_agg, array_agg): __fvsql_distinct(f(…))
			if closeIdx := n.match(i, hi); closeIdx > 0 {
				n.wrapOpen(f.call, fnDistinctAgg, t.pos)
				f.call += 2
				if n.closers == nil {
					n.closers = make(map[int]int)
				}
				n.closers[closeIdx]++
				return i + 2, nil
			}
		}
	case ")":
		switch {
		case len(n.frames) > n.floor:
			n.lastCall = n.frame().call
			n.frames = n.frames[:len(n.frames)-1]
		case n.floor > 1:
			return 0, syntaxErrorAt(n.src, t)
		}
		n.put(")", t.pos, oClose)
		for k := n.closers[i]; k > 0; k-- {
			n.put(")", t.pos, oClose)
		}
	case "::":
		return n.typecast(i, hi)
	case ".":
		if next := n.at(i+1, hi); i+1 < hi && n.last().kind == oClose && (next.kind == tIdent || next.kind == tQIdent) {
			return n.fieldSelect(i, hi)
		}
		n.put(".", t.pos, oOther)
	case ",":
		n.put(",", t.pos, oOther)
		f := n.frame()
		if f.orderStart >= 0 {
			f.orderStart = len(n.out)
		}
		if f.clause == "on" || f.clause == "using" {
			f.clause = "from"
		}
	case "~", "~*", "!~", "!~*", "~~", "!~~", "~~*", "!~~*":
		return n.patternOp(i)
	case "||":
		n.concat(i, hi)
	case "!=":
		n.put("<>", t.pos, oOther)
	default:
		n.put(t.val, t.pos, oOther)
	}
	return i + 1, nil
}

func (n *normalizer) last() otok {
	if len(n.out) == 0 {
		return otok{}
	}
	return n.out[len(n.out)-1]
}

// operandEnds reports whether the output so far ends with an operand, so
// that a following ~ is binary.
func (n *normalizer) operandEnds() bool {
	k := n.last().kind
	return k == oName || k == oValue || k == oClose
}

// patternOp rewrites PostgreSQL's ~ family. TiDB's REGEXP/LIKE/ILIKE sit
// at comparison precedence, PostgreSQL's operators one level higher; the
// difference only shows in unusual mixes (a ~ b = c). Case-insensitive
// regular expressions mark the pattern with MySQL's BINARY prefix, which
// PostgreSQL text can never contain (binary is reserved there).
func (n *normalizer) patternOp(i int) (int, error) {
	t := n.toks[i]
	if t.val == "~" && !n.operandEnds() {
		n.put("~", t.pos, oOther)
		return i + 1, nil
	}
	not := strings.HasPrefix(t.val, "!")
	op := strings.TrimPrefix(t.val, "!")
	if not {
		n.put("NOT", t.pos, oKeyword)
	}
	switch op {
	case "~":
		n.put("REGEXP", t.pos, oKeyword)
	case "~*":
		n.put("REGEXP", t.pos, oKeyword)
		n.put("BINARY", t.pos, oKeyword)
	case "~~":
		n.put("LIKE", t.pos, oKeyword)
	case "~~*":
		n.put("ILIKE", t.pos, oKeyword)
	}
	return i + 1, nil
}

// concat emits ||, parenthesizing operands that hold + - * / % ^: in
// PostgreSQL those bind tighter than ||, in TiDB's grammar || takes plain
// operands ('x' || 1 + 2 would read as ('x' || 1) + 2).
func (n *normalizer) concat(i, hi int) {
	t := n.toks[i]
	if start := n.leftArith(); start >= 0 {
		n.out = slices.Insert(n.out, start, otok{text: "(", pos: n.out[start].pos, kind: oOpen})
		n.put(")", t.pos, oClose)
	}
	n.put("||", t.pos, oOther)
	if end := n.rightArith(i+1, hi); end >= 0 {
		n.put("(", t.pos, oOpen)
		if n.before == nil {
			n.before = make(map[int]int)
		}
		n.before[end]++
	}
}

var arithOps = setOf(`+ - * / % ^`)

// concatBounds are operators binding as loosely as || or looser.
var concatBounds = setOf(`, = <> != < > <= >= <=> || & | << >> ~ ~* !~ !~* ~~ !~~ ~~* !~~* ; ]`)

// leftArith returns where the left operand of || starts in the output if
// it holds a binary arithmetic operator, else -1.
func (n *normalizer) leftArith() int {
	depth, arith := 0, false
	k := len(n.out) - 1
	for ; k >= 0; k-- {
		t := n.out[k]
		switch {
		case t.kind == oClose:
			depth++
		case t.kind == oOpen:
			depth--
		case depth > 0:
		case t.kind == oKeyword || concatBounds[t.text]:
			depth = -1
		case arithOps[t.text] && k > 0 && (n.out[k-1].kind == oName || n.out[k-1].kind == oValue || n.out[k-1].kind == oClose):
			arith = true
		}
		if depth < 0 {
			break
		}
	}
	if !arith {
		return -1
	}
	return k + 1
}

// rightArith returns the input index where the right operand of || ends
// if it holds a binary arithmetic operator, else -1.
func (n *normalizer) rightArith(lo, hi int) int {
	depth, arith := 0, false
	operand := false // whether the previous token ends an operand
	for k := lo; k < hi; k++ {
		t := n.toks[k]
		switch {
		case t.isOp("(") || t.isOp("["):
			depth++
		case t.isOp(")") || t.isOp("]"):
			depth--
		case depth > 0:
		case t.isOp("::"):
			if _, next, err := n.typeName(k+1, hi); err == nil {
				k = next - 1
			}
			operand = true
			continue
		case t.kind == tOp && concatBounds[t.val]:
			depth = -1
		case t.kind == tIdent && (pgReserved[t.val] || syntaxWords[t.val]) && t.val != "true" && t.val != "false" && t.val != "null":
			depth = -1
		case (t.kind == tIdent || t.kind == tQIdent) && operand && !n.at(k+1, hi).isOp("("):
			depth = -1 // an alias without AS
		case t.kind == tOp && arithOps[t.val] && operand:
			arith = true
		}
		if depth < 0 {
			if arith {
				return k
			}
			return -1
		}
		operand = t.kind != tOp || t.isOp(")") || t.isOp("]")
	}
	if arith {
		return hi
	}
	return -1
}

// primaryStart finds where the primary expression ending the output
// starts: a name chain, a literal, or a parenthesis group with its
// function name. It returns -1 when the output does not end in one.
func (n *normalizer) primaryStart() int {
	k := len(n.out) - 1
	if k < 0 {
		return -1
	}
	switch n.out[k].kind {
	case oClose:
		depth := 0
		for ; k >= 0; k-- {
			switch n.out[k].kind {
			case oClose:
				depth++
			case oOpen:
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if k < 0 {
			return -1
		}
		if k > 0 && n.out[k-1].kind == oName {
			k--
		}
	case oName, oValue:
	default:
		return -1
	}
	for k >= 2 && n.out[k-1].text == "." && n.out[k-2].kind == oName {
		k -= 2
	}
	return k
}

// wrap surrounds out[start:] with name( … , extra…).
// fromSyntaxFuncs are the functions whose arguments may contain FROM.
var fromSyntaxFuncs = setOf(`trim substring extract overlay __fvsql_extract`)

// tidbDistinctAggs are the aggregates whose DISTINCT TiDB's grammar parses.
var tidbDistinctAggs = setOf(`count sum avg min max group_concat bit_and bit_or bit_xor std stddev stddev_pop stddev_samp variance var_pop var_samp approx_count_distinct`)

// wrapOpen inserts name( at start, to be closed later.
func (n *normalizer) wrapOpen(start int, name string, pos int) {
	n.out = slices.Insert(n.out, start, otok{text: name, pos: pos, kind: oName}, otok{text: "(", pos: pos, kind: oOpen})
}

func (n *normalizer) wrap(start int, name string, pos int, extra ...otok) {
	n.out = slices.Insert(n.out, start, otok{text: name, pos: pos, kind: oName}, otok{text: "(", pos: pos, kind: oOpen})
	for _, e := range extra {
		n.out = append(n.out, otok{text: ",", pos: pos}, e)
	}
	n.put(")", pos, oClose)
}

// typecast rewrites `x::type` into __fvsql_cast(x, 'type'); applied left
// to right, a::int::text nests.
func (n *normalizer) typecast(i, hi int) (int, error) {
	t := n.toks[i]
	start := n.primaryStart()
	if start < 0 {
		return 0, syntaxErrorAt(n.src, t)
	}
	name, next, err := n.typeName(i+1, hi)
	if err != nil {
		return 0, err
	}
	n.wrap(start, fnCast, t.pos, otok{text: quoteString(name), pos: t.pos, kind: oValue})
	return next, nil
}

// typeName reads a type name at i, checks that fvsql knows it, and returns
// its canonical text ("double precision", "numeric(10,2)", "text[]").
func (n *normalizer) typeName(i, hi int) (string, int, error) {
	return readTypeName(n.src, n.toks, i, hi, n.after)
}

// readTypeName reads a type name from toks[i:hi].
func readTypeName(src string, toks []token, i, hi int, after token) (string, int, error) {
	at := func(k int) token {
		if k < hi {
			return toks[k]
		}
		if hi < len(toks) {
			return toks[hi]
		}
		return after
	}
	first := at(i)
	var words []string
	word := func(t token) string {
		if t.kind == tQIdent && (t.val == "char" || t.val != strings.ToLower(t.val)) {
			return quoteIdent(t.val) // "char" is pg_catalog's one-byte type
		}
		return t.val // "int4" names int4
	}
	switch first.kind {
	case tQIdent, tIdent:
		words = append(words, word(first))
		i++
		if next := at(i + 1); at(i).isOp(".") && (next.kind == tIdent || next.kind == tQIdent) {
			if first.val == "pg_catalog" && (first.kind == tQIdent || next.kind == tQIdent) {
				// "pg_catalog"."int4", as asyncpg writes
				words[0] = word(next)
			} else {
				words[0] += "." + word(next)
			}
			i += 2
		}
	default:
		return "", 0, syntaxErrorAt(src, first)
	}
	base := strings.TrimPrefix(words[0], "pg_catalog.")
	switch base {
	case "double":
		if at(i).is("precision") {
			words = append(words, "precision")
			i++
		}
	case "character", "char", "nchar", "bit":
		if at(i).is("varying") {
			words = append(words, "varying")
			i++
		}
	case "national":
		for at(i).is("character") || at(i).is("char") || at(i).is("varying") {
			words = append(words, at(i).val)
			i++
		}
	case "interval":
		for intervalFields[at(i).val] && at(i).kind == tIdent || at(i).is("to") {
			i++
		}
	}
	name := strings.Join(words, " ")
	if at(i).isOp("(") {
		mods := []string{}
		k := i + 1
		for ; k < hi && !toks[k].isOp(")"); k++ {
			if toks[k].kind != tNumber && !toks[k].isOp(",") {
				return "", 0, syntaxErrorAt(src, toks[k])
			}
			mods = append(mods, toks[k].val)
		}
		if !at(k).isOp(")") {
			return "", 0, syntaxErrorAt(src, at(k))
		}
		name += "(" + strings.Join(mods, "") + ")"
		i = k + 1
	}
	if (base == "timestamp" || base == "time") && (at(i).is("with") || at(i).is("without")) {
		if !at(i+1).is("time") || !at(i+2).is("zone") {
			return "", 0, syntaxErrorAt(src, at(i+1))
		}
		name += " " + at(i).val + " time zone"
		i += 3
	}
	for at(i).isOp("[") {
		k := i + 1
		if at(k).kind == tNumber {
			k++
		}
		if !at(k).isOp("]") {
			return "", 0, syntaxErrorAt(src, at(k))
		}
		name += "[]"
		i = k + 1
	}
	if _, err := types.Parse(name); err != nil {
		return "", 0, pgerror.WithPosition(err, runePos(src, first.pos))
	}
	return name, i, nil
}

// ---------------------------------------------------------------------------
// Words.

func (n *normalizer) wordStep(i, hi int) (int, error) {
	t := n.toks[i]
	next := n.at(i+1, hi)
	if f := n.frame(); f.clause == "from" && (t.kind == tIdent || t.kind == tQIdent) && !n.prevIsDot(i) {
		if n.fromNames == nil {
			n.fromNames = map[string]int{}
		}
		if _, seen := n.fromNames[t.val]; !seen {
			n.fromNames[t.val] = t.pos
		}
		if next.isOp(".") && i+2 < hi { // schema.table: the table's word is named too
			if w := n.toks[i+2]; w.kind == tIdent || w.kind == tQIdent {
				if _, seen := n.fromNames[w.val]; !seen {
					n.fromNames[w.val] = t.pos
				}
			}
		}
	}
	if t.is("within") && next.is("group") && n.at(i+2, hi).isOp("(") && n.at(i+3, hi).is("order") && n.at(i+4, hi).is("by") &&
		i > 0 && n.toks[i-1].isOp(")") && n.lastCall >= 0 && n.last().kind == oClose {
		// f(args) WITHIN GROUP (ORDER BY keys): __fvsql_withingroup(f(args),
		// keys), f quoted (a plain call, whatever TiDB makes of mode)
		call := n.lastCall
		if !strings.HasPrefix(n.out[call].text, `"`) {
			n.out[call].text = quoteIdent(strings.ToLower(n.out[call].text))
		}
		n.wrapOpen(call, fnWithinGroup, t.pos)
		n.put(",", t.pos, oOther)
		n.frames = append(n.frames, frame{call: -1, aggOrder: true, orderStart: len(n.out)})
		return i + 5, nil
	}
	if f := n.frame(); f.call >= 0 && t.is("order") && next.is("by") && !f.aggOrder {
		// agg(args ORDER BY keys): __fvsql_aggorder(agg(args), keys)
		n.put(")", t.pos, oClose)
		n.wrapOpen(f.call, fnAggOrder, t.pos)
		n.put(",", t.pos, oOther)
		f.aggOrder, f.orderStart = true, len(n.out)
		return i + 2, nil
	}
	if f := n.frame(); f.aggOrder && (t.is("asc") || t.is("desc")) {
		if t.is("desc") && f.orderStart < len(n.out) {
			n.wrap(f.orderStart, fnDesc, t.pos)
		}
		return i + 1, nil
	}
	if n.selectLabel(i, hi) {
		// After AS in a select list any word is a column label, keywords
		// too (PostgreSQL's ColLabel): Metabase writes `AS table`.
		n.put(quoteIdent(t.val), t.pos, oName)
		return i + 1, nil
	}
	if j, ok, err := n.tableFunction(i, hi); ok || err != nil {
		return j, err
	}
	if j, ok, err := n.aliasColumns(i, hi); ok || err != nil {
		return j, err
	}
	if h, ok := wordRewrites[t.val]; ok {
		if j, done, err := h(n, i, hi); done || err != nil {
			return j, err
		}
	}
	if typeStartWords[t.val] && !n.prevIsDot(i) {
		if j, ok, err := n.typedLiteral(i, hi); ok || err != nil {
			return j, err
		}
	}
	if sqlValueFuncs[t.val] && !next.isOp("(") && !n.prevIsDot(i) {
		n.put(t.val, t.pos, oName)
		n.put("(", t.pos, oOpen)
		n.put(")", t.pos, oClose)
		return i + 1, nil
	}
	if n.mustQuote(i, hi) {
		n.put(quoteIdent(t.val), t.pos, oName)
		return i + 1, nil
	}
	n.clause(t, i)
	switch {
	case t.val == "true" || t.val == "false" || t.val == "null":
		n.put(t.val, t.pos, oValue)
	case pgReserved[t.val] || syntaxWords[t.val]:
		n.put(t.val, t.pos, oKeyword)
	default:
		n.put(t.val, t.pos, oName)
	}
	if t.is("by") && i > 0 && n.toks[i-1].is("order") {
		n.frame().orderStart = len(n.out)
	}
	return i + 1, nil
}

// selectLabel reports whether word i is a select list item's label after
// AS that TiDB would read as a keyword.
func (n *normalizer) selectLabel(i, hi int) bool {
	t := n.toks[i]
	if t.kind != tIdent || i == 0 || !n.toks[i-1].is("as") || n.frame().clause != "select" {
		return false
	}
	if next := n.at(i+1, hi); next.isOp("(") {
		return false
	}
	return pgReserved[t.val] || syntaxWords[t.val] || tidbReserved[t.val] || typeStartWords[t.val] || sqlValueFuncs[t.val]
}

func (n *normalizer) prevIsDot(i int) bool { return i > 0 && n.toks[i-1].isOp(".") }

// clause tracks which clause each parenthesis level is in.
func (n *normalizer) clause(t token, i int) {
	if !clauseWords[t.val] || n.prevIsDot(i) {
		return
	}
	f := n.frame()
	if f.call >= 0 && t.val == "from" && fromSyntaxFuncs[strings.ToLower(n.out[f.call].text)] {
		return // trim(both 'x' FROM s), substring(s FROM 2): no FROM clause
	}
	f.clause = t.val
	if t.val == "join" {
		f.clause = "from"
	}
	f.orderStart = -1
}

// mustQuote reports whether word i is reserved in TiDB but an ordinary
// identifier here, as `key`, `lag` or `rank` are in PostgreSQL.
func (n *normalizer) mustQuote(i, hi int) bool {
	t := n.toks[i]
	if !tidbReserved[t.val] || pgReserved[t.val] || syntaxWords[t.val] {
		return false
	}
	next := n.at(i+1, hi)
	if next.isOp("(") && !n.prevIsDot(i) {
		return false // a function: rank(), lag(), replace(), left()
	}
	switch t.val {
	case "partition":
		return !next.is("by")
	case "rows", "range", "groups":
		return !(next.is("between") || next.is("unbounded") || next.is("current") ||
			(next.kind == tNumber || next.kind == tParam) && (n.at(i+2, hi).is("preceding") || n.at(i+2, hi).is("following")))
	case "over":
		return n.last().kind != oClose
	case "row":
		return !(i > 0 && n.toks[i-1].is("current"))
	case "recursive":
		return !(i > 0 && n.toks[i-1].is("with"))
	case "schema", "schemas": // CREATE SCHEMA, SHOW SCHEMAS …: statements
		return !(i > 0 && (n.toks[i-1].is("create") || n.toks[i-1].is("drop") || n.toks[i-1].is("alter") || n.toks[i-1].is("show")))
	}
	return true
}

type wordRewrite func(n *normalizer, i, hi int) (next int, done bool, err error)

var wordRewrites map[string]wordRewrite

func init() {
	wordRewrites = map[string]wordRewrite{
		"interval":    (*normalizer).interval,
		"rows":        (*normalizer).frameClause,
		"range":       (*normalizer).frameClause,
		"groups":      (*normalizer).frameClause,
		"cast":        (*normalizer).castCall,
		"extract":     (*normalizer).extract,
		"is":          (*normalizer).isWord,
		"isnull":      (*normalizer).postfixNull,
		"notnull":     (*normalizer).postfixNull,
		"full":        (*normalizer).fullJoin,
		"nulls":       (*normalizer).nulls,
		"limit":       (*normalizer).limitClause,
		"offset":      (*normalizer).limitClause,
		"fetch":       (*normalizer).limitClause,
		"emit":        (*normalizer).emitClause,
		"filter":      (*normalizer).filter,
		"collate":     (*normalizer).collate,
		"at":          (*normalizer).atTimeZone,
		"any":         (*normalizer).quantifier,
		"some":        (*normalizer).quantifier,
		"all":         (*normalizer).quantifier,
		"array":       (*normalizer).arrayWord,
		"lateral":     (*normalizer).lateral,
		"distinct":    (*normalizer).distinctOn,
		"similar":     (*normalizer).similar,
		"binary":      (*normalizer).rejectWord,
		"stddev":      (*normalizer).renameFunc,
		"variance":    (*normalizer).renameFunc,
		"std":         (*normalizer).renameFunc,
		"nextval":     (*normalizer).renameFunc,
		"currval":     (*normalizer).renameFunc,
		"lastval":     (*normalizer).renameFunc,
		"setval":      (*normalizer).renameFunc,
		"convert":     (*normalizer).renameFunc,
		"char":        (*normalizer).renameFunc,
		"date_add":    (*normalizer).renameFunc,
		"date_sub":    (*normalizer).renameFunc,
		"concat":      (*normalizer).renameFunc,
		"cardinality": (*normalizer).renameFunc,
		"for":         (*normalizer).forLocking,
		"operator":    (*normalizer).operatorCall,
		"values":      (*normalizer).valuesList,
		"rollup":      (*normalizer).groupingSet,
		"cube":        (*normalizer).groupingSet,
		"grouping":    (*normalizer).groupingSet,
		"bool_and":    (*normalizer).overCarrier,
		"bool_or":     (*normalizer).overCarrier,
		"every":       (*normalizer).overCarrier,
		"string_agg":  (*normalizer).overCarrier,
		"array_agg":   (*normalizer).overCarrier,
	}
	for name := range carriedOver { // the statistics of two variables
		if wordRewrites[name] == nil {
			wordRewrites[name] = (*normalizer).overCarrier
		}
	}
}

// carriedOver are the aggregates overCarrier carries over a window.
var carriedOver = map[string]bool{"bool_and": true, "bool_or": true, "every": true, "string_agg": true, "array_agg": true,
	"corr": true, "covar_pop": true, "covar_samp": true, "regr_avgx": true, "regr_avgy": true, "regr_count": true,
	"regr_intercept": true, "regr_r2": true, "regr_slope": true, "regr_sxx": true, "regr_sxy": true, "regr_syy": true,
	"jsonb_agg": true, "json_agg": true, "jsonb_object_agg": true, "json_object_agg": true}

// overCarrier rewrites f(…) OVER w, an aggregate TiDB's grammar takes no
// OVER after, into __fvsql_over(f(…), sum(0) OVER w): the window rides
// on a call that takes it, and the converter moves it to f.
func (n *normalizer) overCarrier(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).isOp("(") || n.prevIsDot(i) {
		return 0, false, nil
	}
	c := n.match(i+1, hi)
	if c < 0 || !n.at(c+1, hi).is("over") {
		return 0, false, nil
	}
	end := c + 3 // OVER name
	if n.at(c+2, hi).isOp("(") {
		if end = n.match(c+2, hi) + 1; end <= 0 {
			return 0, false, nil
		}
	}
	end = min(end, hi)
	t := n.toks[i]
	n.put(fnOver, t.pos, oName)
	n.put("(", t.pos, oOpen)
	n.put(quoteIdent(t.val), t.pos, oName)
	if err := n.run(i+1, c+1); err != nil {
		return 0, false, err
	}
	n.put(",", t.pos, oOther)
	n.put("sum", t.pos, oName)
	n.put("(", t.pos, oOpen)
	n.put("0", t.pos, oValue)
	n.put(")", t.pos, oClose)
	if err := n.run(c+1, end); err != nil {
		return 0, false, err
	}
	n.put(")", n.toks[end-1].pos, oClose)
	return end, true, nil
}

// interval rewrites INTERVAL 'text' [field [TO field]] into
// __fvsql_interval('text', 'FIELD'), checking the value now so that a bad
// one is reported at its position.
func (n *normalizer) interval(i, hi int) (int, bool, error) {
	t := n.toks[i]
	lit := n.at(i+1, hi)
	if lit.kind != tString || n.prevIsDot(i) {
		return 0, false, nil
	}
	j, unit := i+2, ""
	for {
		w := n.at(j, hi)
		if w.kind == tIdent && intervalFields[w.val] {
			unit = w.val
			j++
			if n.at(j, hi).isOp("(") && n.at(j+1, hi).kind == tNumber && n.at(j+2, hi).isOp(")") {
				j += 3
			}
			if n.at(j, hi).is("to") {
				j++
				continue
			}
		}
		break
	}
	if _, err := types.ParseInterval(lit.val, unit); err != nil {
		return 0, false, pgerror.WithPosition(err, runePos(n.src, lit.pos))
	}
	n.synthCall(fnInterval, t.pos, quoteString(lit.val), quoteString(strings.ToUpper(unit)))
	return j, true, nil
}

// frameClause rewrites a window frame clause, ROWS|RANGE|GROUPS [BETWEEN
// bound AND] bound, whose offsets TiDB takes only as a number literal or
// as MySQL's INTERVAL expr unit: any other offset (INTERVAL '1 hour',
// '2 days'::interval, -1, 2 + 3) becomes INTERVAL (offset) MICROSECOND,
// which the converter reads back as the offset itself (PostgreSQL has no
// INTERVAL expr unit, so the marker is never the user's).
func (n *normalizer) frameClause(i, hi int) (int, bool, error) {
	t := n.toks[i]
	end := n.frameBoundEnd(i+1, hi)
	if n.prevIsDot(i) || !(n.at(i+1, hi).is("between") || n.at(i+1, hi).is("unbounded") || n.at(i+1, hi).is("current") || end > 0) {
		return 0, false, nil
	}
	n.put(t.val, t.pos, oKeyword)
	j := i + 1
	between := n.at(j, hi).is("between")
	if between {
		n.put("between", n.toks[j].pos, oKeyword)
		j++
	}
	j, err := n.frameBound(j, hi)
	if err != nil || !between || !n.at(j, hi).is("and") {
		return j, true, err
	}
	n.put("and", n.toks[j].pos, oKeyword)
	j, err = n.frameBound(j+1, hi)
	return j, true, err
}

// frameBoundEnd is the index of the PRECEDING or FOLLOWING that ends the
// frame bound starting at token i, or -1: the scan stops at what cannot
// be in an offset (a closing parenthesis or comma of the level, a
// clause's word).
func (n *normalizer) frameBoundEnd(i, hi int) int {
	depth := 0
	for k := i; k < hi; k++ {
		w := n.toks[k]
		switch {
		case w.isOp("(") || w.isOp("["):
			depth++
		case w.isOp(")") || w.isOp("]"):
			if depth--; depth < 0 {
				return -1
			}
		case depth > 0:
		case w.isOp(",") || w.isOp(";") || w.is("and") || w.is("between") || clauseWords[w.val] && w.kind == tIdent:
			return -1
		case w.is("preceding") || w.is("following"):
			if k == i {
				return -1
			}
			return k
		}
	}
	return -1
}

// frameBound emits one frame bound starting at token j and returns the
// index after it. A parameter is wrapped too: TiDB refuses `? FOLLOWING`
// in some positions.
func (n *normalizer) frameBound(j, hi int) (int, error) {
	w := n.at(j, hi)
	if w.is("unbounded") || w.is("current") {
		if err := n.run(j, min(j+2, hi)); err != nil {
			return 0, err
		}
		return min(j+2, hi), nil
	}
	k := n.frameBoundEnd(j, hi)
	if k < 0 {
		return j, nil // not a bound: TiDB reports the syntax error
	}
	if k == j+1 && w.kind == tNumber && !strings.ContainsAny(w.val, "eE") {
		return k + 1, n.run(j, k+1)
	}
	n.put("interval", w.pos, oKeyword)
	n.put("(", w.pos, oOpen)
	n.frames = append(n.frames, frame{orderStart: -1, call: -1})
	if err := n.run(j, k); err != nil {
		return 0, err
	}
	n.frames = n.frames[:len(n.frames)-1]
	n.put(")", n.toks[k].pos, oClose)
	n.put("microsecond", n.toks[k].pos, oKeyword)
	n.put(n.toks[k].val, n.toks[k].pos, oKeyword)
	return k + 1, nil
}

// typedLiteral rewrites `type 'text'` (DATE '2026-01-01', TIMESTAMP WITH
// TIME ZONE '…') into a cast of the string.
func (n *normalizer) typedLiteral(i, hi int) (int, bool, error) {
	k := i + 1
	for k < hi && n.toks[k].kind != tString && k-i < 8 {
		k++
	}
	if k >= hi || n.toks[k].kind != tString {
		return 0, false, nil
	}
	name, j, err := n.typeName(i, hi)
	if err != nil || j != k {
		return 0, false, nil
	}
	n.synthCall(fnCast, n.toks[i].pos, quoteString(n.toks[k].val), quoteString(name))
	return k + 1, true, nil
}

// castCall rewrites CAST(x AS type) for every type name (TiDB only knows
// MySQL's cast targets).
func (n *normalizer) castCall(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).isOp("(") {
		return 0, false, nil
	}
	closeIdx := n.match(i+1, hi)
	if closeIdx < 0 {
		return 0, false, nil
	}
	as := -1
	depth := 0
	for k := i + 2; k < closeIdx; k++ {
		switch {
		case n.toks[k].isOp("("):
			depth++
		case n.toks[k].isOp(")"):
			depth--
		case depth == 0 && n.toks[k].is("as"):
			as = k
		}
		if as >= 0 {
			break
		}
	}
	if as < 0 {
		return 0, false, syntaxErrorAt(n.src, n.toks[closeIdx])
	}
	name, j, err := n.typeName(as+1, closeIdx)
	if err != nil {
		return 0, false, err
	}
	if j != closeIdx {
		return 0, false, syntaxErrorAt(n.src, n.toks[j])
	}
	t := n.toks[i]
	n.put(fnCast, t.pos, oName)
	n.put("(", n.toks[i+1].pos, oOpen)
	n.frames = append(n.frames, frame{orderStart: -1, call: -1})
	if err := n.run(i+2, as); err != nil {
		return 0, false, err
	}
	n.frames = n.frames[:len(n.frames)-1]
	n.put(",", n.toks[as].pos, oOther)
	n.put(quoteString(name), n.toks[as+1].pos, oValue)
	n.put(")", n.toks[closeIdx].pos, oClose)
	return closeIdx + 1, true, nil
}

// match returns the index of the ")" matching the "(" at i, or -1.
func (n *normalizer) match(i, hi int) int {
	depth := 0
	for k := i; k < hi; k++ {
		switch {
		case n.toks[k].isOp("("):
			depth++
		case n.toks[k].isOp(")"):
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// extract rewrites EXTRACT(field FROM x), whose fields TiDB limits to
// MySQL's units, into __fvsql_extract('field', x).
func (n *normalizer) extract(i, hi int) (int, bool, error) {
	field := n.at(i+2, hi)
	if !n.at(i+1, hi).isOp("(") || !n.at(i+3, hi).is("from") ||
		(field.kind != tIdent && field.kind != tString && field.kind != tQIdent) {
		return 0, false, nil
	}
	t := n.toks[i]
	n.put(fnExtract, t.pos, oName)
	n.open(n.toks[i+1].pos)
	n.put(quoteString(strings.ToLower(field.val)), field.pos, oValue)
	n.put(",", n.toks[i+3].pos, oOther)
	return i + 4, true, nil
}

// isWord handles IS [NOT] DISTINCT FROM (as MySQL's <=>, the negated form
// marking its right operand with BINARY) and IS [NOT] UNKNOWN.
func (n *normalizer) isWord(i, hi int) (int, bool, error) {
	t := n.toks[i]
	j := i + 1
	not := n.at(j, hi).is("not")
	if not {
		j++
	}
	switch {
	case n.at(j, hi).is("distinct") && n.at(j+1, hi).is("from"):
		n.put("<=>", t.pos, oOther)
		if !not {
			n.put("BINARY", t.pos, oKeyword)
		}
		return j + 2, true, nil
	case n.at(j, hi).is("unknown"):
		n.put("is", t.pos, oKeyword)
		if not {
			n.put("not", t.pos, oKeyword)
		}
		n.put("null", t.pos, oValue)
		return j + 1, true, nil
	}
	return 0, false, nil
}

// postfixNull rewrites PostgreSQL's x ISNULL / x NOTNULL.
func (n *normalizer) postfixNull(i, hi int) (int, bool, error) {
	t := n.toks[i]
	n.put("is", t.pos, oKeyword)
	if t.val == "notnull" {
		n.put("not", t.pos, oKeyword)
	}
	n.put("null", t.pos, oValue)
	return i + 1, true, nil
}

// fullJoin marks FULL [OUTER] JOIN, which TiDB lacks, as STRAIGHT_JOIN;
// PostgreSQL has no STRAIGHT_JOIN (and the normalizer quotes a written
// straight_join), so the converter can read it back as "full".
func (n *normalizer) fullJoin(i, hi int) (int, bool, error) {
	j := i + 1
	if n.at(j, hi).is("outer") {
		j++
	}
	if !n.at(j, hi).is("join") {
		return 0, false, nil
	}
	n.put("STRAIGHT_JOIN", n.toks[i].pos, oKeyword)
	n.frame().clause = "from"
	return j + 1, true, nil
}

// nulls rewrites `item [ASC|DESC] NULLS FIRST|LAST` of an ORDER BY into
// __fvsql_nulls_first(item) [ASC|DESC], which TiDB parses.
func (n *normalizer) nulls(i, hi int) (int, bool, error) {
	w := n.at(i+1, hi)
	f := n.frame()
	if !(w.is("first") || w.is("last")) || f.orderStart < 0 || f.orderStart >= len(n.out) {
		return 0, false, nil
	}
	name := fnNullsFirst
	if w.is("last") {
		name = fnNullsLast
	}
	end := len(n.out)
	var dir []otok
	if l := n.last(); l.kind == oKeyword && (l.text == "asc" || l.text == "desc") {
		dir = append(dir, l)
		end--
	}
	n.out = n.out[:end]
	n.wrap(f.orderStart, name, n.toks[i].pos)
	n.out = append(n.out, dir...)
	return i + 2, true, nil
}

// limitClause reads a run of LIMIT/OFFSET/FETCH clauses in any of
// PostgreSQL's orders and emits TiDB's `LIMIT count OFFSET off`.
func (n *normalizer) limitClause(i, hi int) (int, bool, error) {
	if n.toks[i].is("fetch") && !(n.at(i+1, hi).is("first") || n.at(i+1, hi).is("next")) {
		return 0, false, nil
	}
	start := n.toks[i]
	var count, offset [2]int
	haveCount, haveOffset, countAll := false, false, false
	for {
		t := n.at(i, hi)
		switch {
		case t.is("limit") && !haveCount:
			haveCount = true
			if n.at(i+1, hi).is("all") {
				countAll = true
				i += 2
				continue
			}
			j, err := n.limitExpr(i+1, hi)
			if err != nil {
				return 0, false, err
			}
			count, i = [2]int{i + 1, j}, j
		case t.is("offset") && !haveOffset:
			haveOffset = true
			j, err := n.limitExpr(i+1, hi)
			if err != nil {
				return 0, false, err
			}
			offset, i = [2]int{i + 1, j}, j
			if n.at(i, hi).is("row") || n.at(i, hi).is("rows") {
				i++
			}
		case t.is("fetch") && !haveCount && (n.at(i+1, hi).is("first") || n.at(i+1, hi).is("next")):
			haveCount = true
			lo := i + 2
			j := lo
			if !(n.at(j, hi).is("row") || n.at(j, hi).is("rows")) {
				var err error
				if j, err = n.limitExpr(lo, hi); err != nil {
					return 0, false, err
				}
			}
			count = [2]int{lo, j}
			if !(n.at(j, hi).is("row") || n.at(j, hi).is("rows")) {
				return 0, false, syntaxErrorAt(n.src, n.at(j, hi))
			}
			if n.at(j+1, hi).is("with") {
				return 0, false, notSupportedAt(n.src, n.toks[j+1].pos, "FETCH … WITH TIES")
			}
			if !n.at(j+1, hi).is("only") {
				return 0, false, syntaxErrorAt(n.src, n.at(j+1, hi))
			}
			i = j + 2
		default:
			return i, true, n.emitLimit(start.pos, count, offset, haveCount && !countAll, haveOffset)
		}
	}
}

func (n *normalizer) emitLimit(pos int, count, offset [2]int, haveCount, haveOffset bool) error {
	f := n.frame()
	f.clause, f.orderStart = "limit", -1
	if !haveCount && !haveOffset {
		return nil
	}
	n.put("LIMIT", pos, oKeyword)
	switch {
	case haveCount && count[0] == count[1]:
		n.put("1", pos, oValue) // FETCH FIRST ROW ONLY
	case haveCount:
		if err := n.limitCount(count); err != nil {
			return err
		}
	default:
		n.put(noLimit, pos, oValue)
	}
	if haveOffset {
		n.put("OFFSET", pos, oKeyword)
		return n.limitCount(offset)
	}
	return nil
}

// limitCount emits a LIMIT or OFFSET count: a number or $n as it is
// (TiDB's grammar takes nothing else there), any other expression
// ($1::integer, (2), 10 * 2) parsed on its own and stood for by a "?".
func (n *normalizer) limitCount(r [2]int) error {
	if r[1]-r[0] == 1 && (n.toks[r[0]].kind == tNumber || n.toks[r[0]].kind == tParam) {
		return n.run(r[0], r[1])
	}
	u := unit{src: n.src, toks: n.toks[r[0]:r[1]], after: n.at(r[1], len(n.toks))}
	e, maxParam, err := parseExprUnit(u)
	if err != nil {
		return err
	}
	n.exprs = append(n.exprs, e)
	n.max = max(n.max, maxParam)
	n.out = append(n.out, otok{text: "?", pos: n.toks[r[0]].pos, kind: oValue, param: -len(n.exprs)})
	return nil
}

// limitExpr returns the end of a LIMIT/OFFSET/FETCH count starting at lo.
func (n *normalizer) limitExpr(lo, hi int) (int, error) {
	depth := 0
	for k := lo; k < hi; k++ {
		t := n.toks[k]
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			if depth == 0 {
				return n.nonEmpty(lo, k)
			}
			depth--
		case depth > 0:
		case t.isOp(","):
			return 0, pgerror.WithPosition(pgerror.New(pgerror.SyntaxError, "LIMIT #,# syntax is not supported").
				WithHint("Use separate LIMIT and OFFSET clauses."), runePos(n.src, t.pos))
		case t.kind == tIdent && limitEnd[t.val]:
			return n.nonEmpty(lo, k)
		}
	}
	return n.nonEmpty(lo, hi)
}

func (n *normalizer) nonEmpty(lo, k int) (int, error) {
	if k == lo {
		return 0, syntaxErrorAt(n.src, n.at(k, k))
	}
	return k, nil
}

var limitEnd = setOf(`limit offset fetch union intersect except emit for with row rows order`)

// emitClause strips a trailing EMIT ON WINDOW CLOSE / EMIT CHANGES.
func (n *normalizer) emitClause(i, hi int) (int, bool, error) {
	if len(n.frames) != 1 {
		return 0, false, nil
	}
	j := i + 1
	switch {
	case n.at(j, hi).is("changes"):
		n.emit = EmitChanges
		j++
	case n.at(j, hi).is("on") && n.at(j+1, hi).is("window") && n.at(j+2, hi).is("close"):
		n.emit = EmitOnWindowClose
		j += 3
	default:
		return 0, false, nil // a column named emit
	}
	if j < hi {
		return 0, false, syntaxErrorAt(n.src, n.toks[j])
	}
	return j, true, nil
}

// tableFunction replaces a function call in FROM — a window TVF
// (TUMBLE/HOP/SESSION) or a set-returning function such as unnest or
// generate_series, possibly schema-qualified — by a synthetic table name;
// the arguments are parsed separately. WITH ORDINALITY and a column alias
// list (AS t(a, b)), which TiDB lacks, are taken out here too.
func (n *normalizer) tableFunction(i, hi int) (int, bool, error) {
	t := n.toks[i]
	if t.kind != tIdent && t.kind != tQIdent || t.kind == tIdent && pgReserved[t.val] || n.frame().clause != "from" || i == 0 {
		return 0, false, nil
	}
	prev := n.toks[i-1]
	if !(prev.is("from") || prev.is("join") || prev.isOp(",") || prev.is("straight_join") || prev.is("lateral")) {
		return 0, false, nil
	}
	j, name, qualified := i+1, t.val, false
	if n.at(j, hi).isOp(".") && (n.at(j+1, hi).kind == tIdent || n.at(j+1, hi).kind == tQIdent) && n.at(j+2, hi).isOp("(") {
		if t.val != "pg_catalog" {
			return 0, false, nil // schema.table(…) is no function fvsql has
		}
		j, name, qualified = j+2, n.at(j+1, hi).val, true
	}
	if !n.at(j, hi).isOp("(") {
		return 0, false, nil
	}
	closeIdx := n.match(j, hi)
	if closeIdx < 0 {
		return 0, false, nil
	}
	span := tvfSpan{kind: "function", name: name, pos: t.pos}
	if _, window := tvfArity[name]; window && !qualified {
		span.kind = name
	}
	if closeIdx > j+1 {
		depth, lo := 0, j+1
		for k := j + 1; k <= closeIdx; k++ {
			switch tk := n.toks[k]; {
			case tk.isOp("(") || tk.isOp("["):
				depth++
			case (tk.isOp(")") || tk.isOp("]")) && k < closeIdx:
				depth--
			case depth == 0 && (tk.isOp(",") || k == closeIdx):
				span.args = append(span.args, [2]int{lo, k})
				lo = k + 1
			}
		}
	}
	n.put(tvfPrefix+strconv.Itoa(len(n.tvfs)), t.pos, oName)
	k := closeIdx + 1
	if n.at(k, hi).is("with") && n.at(k+1, hi).is("ordinality") {
		span.ordinality = true
		k += 2
	}
	// [AS] alias (col, …): TiDB takes the alias, the columns stay here.
	a := k
	if n.at(a, hi).is("as") {
		a++
	}
	alias := n.at(a, hi)
	if (alias.kind == tIdent && !pgReserved[alias.val] || alias.kind == tQIdent) && n.at(a+1, hi).isOp("(") {
		cols, end, err := n.columnNames(a+2, hi)
		if err != nil {
			return 0, false, err
		}
		span.cols = cols
		n.put("AS", alias.pos, oKeyword)
		n.put(quoteIdent(alias.val), alias.pos, oName)
		k = end
	}
	n.tvfs = append(n.tvfs, span)
	return k, true, nil
}

// aliasColumns takes the column list of the alias at word i of a FROM
// clause, after a relation or a subquery ([AS] x(a, b)), out of the text:
// the alias becomes a synthetic one that names its aliasSpan.
func (n *normalizer) aliasColumns(i, hi int) (int, bool, error) {
	t := n.toks[i]
	if n.frame().clause != "from" || i < 2 || !n.at(i+1, hi).isOp("(") ||
		!(t.kind == tIdent && !pgReserved[t.val] && !syntaxWords[t.val] || t.kind == tQIdent) {
		return 0, false, nil
	}
	src := i - 1
	if n.toks[src].is("as") {
		src--
	}
	if src < 1 || !n.fromSource(src) {
		return 0, false, nil
	}
	cols, end, err := n.columnNames(i+2, hi)
	if err != nil {
		return 0, false, err
	}
	if !n.toks[i-1].is("as") {
		n.put("AS", t.pos, oKeyword)
	}
	n.put(aliasPrefix+strconv.Itoa(len(n.aliases)), t.pos, oName)
	n.aliases = append(n.aliases, aliasSpan{alias: t.val, cols: cols})
	return end, true, nil
}

// columnNames reads an alias's column list from word m, after its "(":
// the names, and the word after the ")".
func (n *normalizer) columnNames(m, hi int) ([]string, int, error) {
	var cols []string
	for {
		c := n.at(m, hi)
		if c.kind != tIdent && c.kind != tQIdent {
			return nil, 0, syntaxErrorAt(n.src, c)
		}
		cols = append(cols, c.val)
		m++
		if n.at(m, hi).isOp(")") {
			return cols, m + 1, nil
		}
		if !n.at(m, hi).isOp(",") {
			return nil, 0, syntaxErrorAt(n.src, n.at(m, hi))
		}
		m++
	}
}

// fromSource reports whether token k ends a FROM item's relation or
// subquery: a name (schema-qualified or not) or the ")" of a subquery,
// right after FROM, JOIN or a comma.
func (n *normalizer) fromSource(k int) bool {
	starts := func(j int) bool {
		return j >= 0 && (n.toks[j].is("from") || n.toks[j].is("join") || n.toks[j].isOp(",") || n.toks[j].is("lateral"))
	}
	switch t := n.toks[k]; {
	case t.kind == tIdent && !pgReserved[t.val] || t.kind == tQIdent:
		if k >= 2 && n.toks[k-1].isOp(".") {
			k -= 2
		}
		return starts(k - 1)
	case t.isOp(")"):
		depth := 0
		for j := k; j >= 0; j-- {
			switch {
			case n.toks[j].isOp(")"):
				depth++
			case n.toks[j].isOp("("):
				depth--
				if depth == 0 {
					return starts(j-1) && (n.at(j+1, len(n.toks)).is("select") || n.at(j+1, len(n.toks)).is("with") ||
						n.at(j+1, len(n.toks)).is("values") || n.at(j+1, len(n.toks)).isOp("("))
				}
			}
		}
	}
	return false
}

// lateral drops LATERAL before a function in FROM (PostgreSQL's
// functions in FROM see the items before them anyway); before a
// subquery it stays, for TiDB's grammar (DerivedTable.Lateral).
func (n *normalizer) lateral(i, hi int) (int, bool, error) {
	if n.frame().clause == "from" && (n.at(i+1, hi).kind == tIdent || n.at(i+1, hi).kind == tQIdent) {
		return i + 1, true, nil // the function's own check follows
	}
	if n.frame().clause == "from" && n.at(i+1, hi).isOp("(") {
		return 0, false, nil
	}
	return 0, false, notSupportedAt(n.src, n.toks[i].pos, "LATERAL here")
}

// arrayWord rewrites ARRAY[…] into __fvsql_array(…) and ARRAY(subquery)
// into __fvsql_array_sub((subquery)).
func (n *normalizer) arrayWord(i, hi int) (int, bool, error) {
	t, next := n.toks[i], n.at(i+1, hi)
	switch {
	case next.isOp("["):
		closeIdx := n.matchBracket(i+1, hi)
		if closeIdx < 0 {
			return 0, false, syntaxErrorAt(n.src, n.at(hi, hi))
		}
		n.put(fnArray, t.pos, oName)
		n.open(next.pos)
		if err := n.run(i+2, closeIdx); err != nil {
			return 0, false, err
		}
		n.frames = n.frames[:len(n.frames)-1]
		n.put(")", n.toks[closeIdx].pos, oClose)
		return closeIdx + 1, true, nil
	case next.isOp("("):
		closeIdx := n.match(i+1, hi)
		inner := n.at(i+2, hi)
		if closeIdx < 0 || !(inner.is("select") || inner.is("with") || inner.is("values") || inner.isOp("(")) {
			return 0, false, syntaxErrorAt(n.src, inner)
		}
		n.put(fnArraySub, t.pos, oName)
		n.put("(", next.pos, oOpen)
		if n.closers == nil {
			n.closers = make(map[int]int)
		}
		n.closers[closeIdx]++
		return i + 1, true, nil // the subquery's own parentheses follow
	}
	return 0, false, syntaxErrorAt(n.src, t)
}

// matchBracket returns the index of the "]" matching the "[" at i, or -1.
func (n *normalizer) matchBracket(i, hi int) int {
	depth := 0
	for k := i; k < hi; k++ {
		switch {
		case n.toks[k].isOp("["):
			depth++
		case n.toks[k].isOp("]"):
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// subscript rewrites x[i] into __fvsql_subscript(x, i) and x[lo:hi] into
// __fvsql_slice(x, lo, hi), an omitted bound written as __fvsql_omitted.
func (n *normalizer) subscript(i, hi int) (int, error) {
	t := n.toks[i]
	start := n.primaryStart()
	closeIdx := n.matchBracket(i, hi)
	if !n.operandEnds() || start < 0 {
		return 0, syntaxErrorAt(n.src, t)
	}
	if closeIdx < 0 {
		return 0, syntaxErrorAt(n.src, n.at(hi, hi))
	}
	colon, depth := -1, 0
	for k := i + 1; k < closeIdx; k++ {
		switch tk := n.toks[k]; {
		case tk.isOp("(") || tk.isOp("["):
			depth++
		case tk.isOp(")") || tk.isOp("]"):
			depth--
		case depth == 0 && tk.isOp(":") && colon < 0:
			colon = k
		}
	}
	name := fnSubscript
	if colon >= 0 {
		name = fnSlice
	}
	n.out = slices.Insert(n.out, start, otok{text: name, pos: t.pos, kind: oName}, otok{text: "(", pos: t.pos, kind: oOpen})
	part := func(lo, hi int) error {
		n.put(",", n.toks[lo-1].pos, oOther)
		if lo == hi {
			if colon < 0 {
				return syntaxErrorAt(n.src, n.toks[hi])
			}
			n.put(colOmitted, n.toks[lo-1].pos, oName)
			return nil
		}
		n.frames = append(n.frames, frame{orderStart: -1, call: -1})
		defer func() { n.frames = n.frames[:len(n.frames)-1] }()
		return n.run(lo, hi)
	}
	if colon < 0 {
		if err := part(i+1, closeIdx); err != nil {
			return 0, err
		}
	} else {
		if err := part(i+1, colon); err != nil {
			return 0, err
		}
		if err := part(colon+1, closeIdx); err != nil {
			return 0, err
		}
	}
	n.put(")", n.toks[closeIdx].pos, oClose)
	return closeIdx + 1, nil
}

// fieldSelect rewrites (x).field, a field of a composite value, into
// __fvsql_field(x, 'field'); TiDB's grammar has no such postfix.
func (n *normalizer) fieldSelect(i, hi int) (int, error) {
	t, name := n.toks[i], n.toks[i+1]
	start := n.primaryStart()
	if start < 0 {
		return 0, syntaxErrorAt(n.src, t)
	}
	n.out = slices.Insert(n.out, start, otok{text: fnField, pos: t.pos, kind: oName}, otok{text: "(", pos: t.pos, kind: oOpen})
	n.put(",", t.pos, oOther)
	n.put(quoteString(name.val), name.pos, oValue)
	n.put(")", name.pos, oClose)
	return i + 2, nil
}

// filter rewrites agg(…) FILTER (WHERE cond) into
// __fvsql_filter(agg(…), (cond)), and agg(…) FILTER (WHERE cond) OVER w
// into __fvsql_filter(agg(…) OVER w, (cond)).
func (n *normalizer) filter(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).isOp("(") || !n.at(i+2, hi).is("where") || n.last().kind != oClose {
		return 0, false, nil
	}
	start := n.primaryStart()
	closeIdx := n.match(i+1, hi)
	if start < 0 || closeIdx < 0 {
		return 0, false, nil
	}
	t := n.toks[i]
	// an aggregate TiDB takes no OVER after rides on a carrier (overCarrier)
	carried := carriedOver[strings.Trim(n.out[start].text, "`\"")]
	n.out = slices.Insert(n.out, start, otok{text: fnFilter, pos: t.pos, kind: oName}, otok{text: "(", pos: t.pos, kind: oOpen})
	if over := n.at(closeIdx+1, hi); over.is("over") {
		// agg(…) FILTER (WHERE cond) OVER w: __fvsql_filter(agg(…) OVER w,
		// (cond)), the window first (TiDB takes OVER after a call only)
		end := closeIdx + 3 // OVER name
		if n.at(closeIdx+2, hi).isOp("(") {
			if end = n.match(closeIdx+2, hi) + 1; end <= 0 {
				return 0, false, syntaxErrorAt(n.src, over)
			}
		}
		if carried {
			n.out = slices.Insert(n.out, start+2, otok{text: fnOver, pos: t.pos, kind: oName}, otok{text: "(", pos: t.pos, kind: oOpen})
			n.put(",", t.pos, oOther)
			n.put("sum", t.pos, oName)
			n.put("(", t.pos, oOpen)
			n.put("0", t.pos, oValue)
			n.put(")", t.pos, oClose)
		}
		if err := n.run(closeIdx+1, min(end, hi)); err != nil {
			return 0, false, err
		}
		if carried {
			n.put(")", t.pos, oClose)
		}
		n.put(",", t.pos, oOther)
		n.put("(", n.toks[i+1].pos, oOpen)
		if err := n.run(i+3, closeIdx); err != nil {
			return 0, false, err
		}
		n.put(")", n.toks[closeIdx].pos, oClose)
		n.put(")", n.toks[closeIdx].pos, oClose)
		return min(end, hi), true, nil
	}
	n.put(",", t.pos, oOther)
	n.open(n.toks[i+1].pos)
	if n.closers == nil {
		n.closers = make(map[int]int)
	}
	n.closers[closeIdx]++
	return i + 3, true, nil
}

// collate drops COLLATE name: fvsql compares strings by code point.
func (n *normalizer) collate(i, hi int) (int, bool, error) {
	j := i + 1
	w := n.at(j, hi)
	if w.kind != tIdent && w.kind != tQIdent {
		return 0, false, syntaxErrorAt(n.src, w)
	}
	j++
	for n.at(j, hi).isOp(".") && (n.at(j+1, hi).kind == tIdent || n.at(j+1, hi).kind == tQIdent) {
		j += 2
	}
	return j, true, nil
}

// atTimeZone rewrites x AT TIME ZONE z into timezone(z, x), PostgreSQL's
// own spelling; z must be a single token.
func (n *normalizer) atTimeZone(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).is("time") || !n.at(i+2, hi).is("zone") {
		return 0, false, nil
	}
	t := n.toks[i]
	start := n.primaryStart()
	if start < 0 {
		return 0, false, syntaxErrorAt(n.src, t)
	}
	// the zone: a constant, a parameter, a column, NULL, INTERVAL '…', a
	// call or a parenthesized expression
	lo, end := i+3, i+4
	z := n.at(lo, hi)
	switch {
	case z.kind == tString || z.kind == tParam || z.is("null"):
	case z.is("interval") && n.at(lo+1, hi).kind == tString:
		end = lo + 2
	case z.isOp("("):
		if end = n.match(lo, hi) + 1; end == 0 {
			return 0, false, syntaxErrorAt(n.src, z)
		}
	case z.kind == tIdent && !pgReserved[z.val] || z.kind == tQIdent:
		for end < hi && n.toks[end].isOp(".") && end+1 < hi && (n.toks[end+1].kind == tIdent || n.toks[end+1].kind == tQIdent) {
			end += 2
		}
		if n.at(end, hi).isOp("(") {
			if end = n.match(end, hi) + 1; end == 0 {
				return 0, false, syntaxErrorAt(n.src, z)
			}
		}
	default:
		return 0, false, syntaxErrorAt(n.src, z)
	}
	// its tokens, normalized at the end of the output, go first:
	// timezone(zone, x) (after a "," as there, not after an operand)
	mark := len(n.out)
	n.put(",", t.pos, oOther)
	if err := n.run(lo, end); err != nil {
		return 0, false, err
	}
	zone := slices.Clone(n.out[mark+1:])
	n.out = n.out[:mark]
	head := append([]otok{{text: "timezone", pos: t.pos, kind: oName}, {text: "(", pos: t.pos, kind: oOpen}}, zone...)
	n.out = slices.Insert(n.out, start, append(head, otok{text: ",", pos: t.pos})...)
	n.put(")", t.pos, oClose)
	return end, true, nil
}

// quantifiedOps are the output tokens a quantified ANY/ALL may follow.
var quantifiedOps = setOf(`= <> < <= > >= LIKE ILIKE REGEXP like ilike`)

// quantifier rewrites x op ANY|SOME|ALL (array) into x op
// __fvsql_any(array) (or __fvsql_all); the subquery form stays TiDB's.
func (n *normalizer) quantifier(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).isOp("(") || !quantifiedOps[n.last().text] {
		return 0, false, nil
	}
	inner := n.at(i+2, hi)
	if inner.is("select") || inner.is("with") || inner.is("values") {
		return 0, false, nil
	}
	name := fnAny
	if n.toks[i].is("all") {
		name = fnAll
	}
	n.put(name, n.toks[i].pos, oName)
	return i + 1, true, nil // the parenthesized array follows as the argument
}

// operatorCall reads OPERATOR(schema.op), which psql's \d queries use,
// as the bare operator op.
func (n *normalizer) operatorCall(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).isOp("(") {
		return 0, false, nil
	}
	k := i + 2
	if n.at(k, hi).kind == tIdent && n.at(k+1, hi).isOp(".") {
		k += 2
	}
	op := n.at(k, hi)
	if op.kind != tOp || !n.at(k+1, hi).isOp(")") || op.isOp("(") || op.isOp(")") {
		return 0, false, syntaxErrorAt(n.src, op)
	}
	if _, err := n.opStep(k, k+1); err != nil {
		return 0, false, err
	}
	return k + 2, true, nil
}

// forLocking rejects SELECT … FOR UPDATE/SHARE (row locks mean nothing
// on a stream).
func (n *normalizer) forLocking(i, hi int) (int, bool, error) {
	switch w := n.at(i+1, hi); {
	case w.is("update"), w.is("share"), w.is("no"), w.is("key"):
		return 0, false, notSupportedAt(n.src, n.toks[i].pos, "SELECT … FOR UPDATE/SHARE")
	}
	return 0, false, nil
}

// valuesList rewrites a VALUES list in parentheses, which TiDB does not
// parse as a query, into a UNION ALL of one-row SELECTs:
// (VALUES (1, 'a'), (2, 'b')) [AS] v(x, y) becomes (SELECT 1 AS x, 'a' AS
// y UNION ALL SELECT 2, 'b') AS v, the columns named by the alias list or
// column1, column2… as PostgreSQL names them (psycopg2's execute_values
// with fetch=True). INSERT … VALUES is not touched.
func (n *normalizer) valuesList(i, hi int) (int, bool, error) {
	if i == 0 || !n.toks[i-1].isOp("(") {
		return 0, false, nil
	}
	outer := n.match(i-1, hi)
	if outer < 0 {
		return 0, false, nil
	}
	var rows [][][2]int // per row, the token ranges of its values
	for k := i + 1; k < outer; {
		if !n.toks[k].isOp("(") {
			return 0, false, syntaxErrorAt(n.src, n.toks[k])
		}
		end := n.match(k, outer)
		if end < 0 {
			return 0, false, syntaxErrorAt(n.src, n.toks[k])
		}
		var vals [][2]int
		depth, lo := 0, k+1
		for j := k + 1; j <= end; j++ {
			switch t := n.toks[j]; {
			case t.isOp("(") || t.isOp("["):
				depth++
			case (t.isOp(")") || t.isOp("]")) && j < end:
				depth--
			case depth == 0 && (t.isOp(",") || j == end):
				if j == lo {
					return 0, false, syntaxErrorAt(n.src, t)
				}
				vals = append(vals, [2]int{lo, j})
				lo = j + 1
			}
		}
		if len(rows) > 0 && len(vals) != len(rows[0]) {
			return 0, false, pgerror.WithPosition(pgerror.New(pgerror.SyntaxError, "VALUES lists must all be the same length"), runePos(n.src, n.toks[k].pos))
		}
		rows = append(rows, vals)
		k = end + 1
		if k < outer {
			if !n.toks[k].isOp(",") {
				return 0, false, syntaxErrorAt(n.src, n.toks[k])
			}
			k++
		}
	}
	if len(rows) == 0 {
		return 0, false, syntaxErrorAt(n.src, n.at(i+1, hi))
	}
	// after the list: [AS] alias [(names)]
	j := outer + 1
	var alias token
	var names []string
	if n.at(j, hi).is("as") {
		j++
	}
	if t := n.at(j, hi); t.kind == tQIdent || t.kind == tIdent && !pgReserved[t.val] && !syntaxWords[t.val] {
		alias = t
		j++
		if n.at(j, hi).isOp("(") {
			end := n.match(j, hi)
			if end < 0 {
				return 0, false, syntaxErrorAt(n.src, n.at(j, hi))
			}
			for k := j + 1; k < end; k++ {
				if t := n.toks[k]; t.kind == tIdent || t.kind == tQIdent {
					names = append(names, t.val)
				} else if !t.isOp(",") {
					return 0, false, syntaxErrorAt(n.src, t)
				}
			}
			j = end + 1
		}
	}
	if len(names) > len(rows[0]) {
		return 0, false, pgerror.New(pgerror.InvalidColumnReference, "VALUES list %q has %d columns available but %d columns specified", alias.val, len(rows[0]), len(names))
	}
	pos := n.toks[i].pos
	for r, vals := range rows {
		if r > 0 {
			n.put("UNION", pos, oKeyword)
			n.put("ALL", pos, oKeyword)
		}
		n.put("SELECT", pos, oKeyword)
		for c, v := range vals {
			if c > 0 {
				n.put(",", pos, oOther)
			}
			if err := n.run(v[0], v[1]); err != nil {
				return 0, false, err
			}
			if r == 0 {
				name := fmt.Sprintf("column%d", c+1)
				if c < len(names) {
					name = names[c]
				}
				n.put("AS", pos, oKeyword)
				n.put(quoteIdent(name), pos, oName)
			}
		}
	}
	// the list's ")" and the alias, without its column list
	if len(n.frames) > n.floor {
		n.frames = n.frames[:len(n.frames)-1]
	}
	n.put(")", n.toks[outer].pos, oClose)
	if alias.val != "" {
		n.put("AS", alias.pos, oKeyword)
		n.put(quoteIdent(alias.val), alias.pos, oName)
	}
	return j, true, nil
}

// distinctOn rewrites SELECT DISTINCT ON (keys) items as SELECT
// __fvsql_distinct_on(keys), items: the converter takes the first item
// back out into Select.DistinctOn.
func (n *normalizer) distinctOn(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).is("on") {
		return 0, false, nil
	}
	if !n.at(i+2, hi).isOp("(") || i == 0 || !n.toks[i-1].is("select") {
		return 0, false, syntaxErrorAt(n.src, n.at(i+2, hi))
	}
	closeIdx := n.match(i+2, hi)
	if closeIdx < 0 || closeIdx == i+3 {
		return 0, false, syntaxErrorAt(n.src, n.at(i+3, hi))
	}
	n.put(fnDistinctOn, n.toks[i].pos, oName)
	n.put("(", n.toks[i+2].pos, oOpen)
	n.frames = append(n.frames, frame{orderStart: -1, call: -1})
	if err := n.run(i+3, closeIdx); err != nil {
		return 0, false, err
	}
	n.frames = n.frames[:len(n.frames)-1]
	n.put(")", n.toks[closeIdx].pos, oClose)
	n.put(",", n.toks[closeIdx].pos, oOther)
	return closeIdx + 1, true, nil
}

func (n *normalizer) similar(i, hi int) (int, bool, error) {
	if n.at(i+1, hi).is("to") {
		return 0, false, notSupportedAt(n.src, n.toks[i].pos, "SIMILAR TO")
	}
	return 0, false, nil
}

// rejectWord refuses words that PostgreSQL reserves without using them in
// expressions but that mean something to TiDB.
func (n *normalizer) rejectWord(i, hi int) (int, bool, error) {
	return 0, false, syntaxErrorAt(n.src, n.toks[i])
}

// groupingSet rewrites ROLLUP (…), CUBE (…) and GROUPING SETS (…) in a
// GROUP BY clause (or inside GROUPING SETS) as calls of synthetic
// functions, which the planner expands (grouping sets as a UNION ALL of
// groupings). GROUPING (…) elsewhere is the function.
func (n *normalizer) groupingSet(i, hi int) (int, bool, error) {
	if n.prevIsDot(i) || (n.frame().clause != "group" && !n.inGroupingSets()) {
		return 0, false, nil
	}
	t := n.toks[i]
	switch {
	case t.is("rollup") && n.at(i+1, hi).isOp("("):
		n.put(fnRollup, t.pos, oName)
		return i + 1, true, nil
	case t.is("cube") && n.at(i+1, hi).isOp("("):
		n.put(fnCube, t.pos, oName)
		return i + 1, true, nil
	case t.is("grouping") && n.at(i+1, hi).is("sets") && n.at(i+2, hi).isOp("("):
		n.put(fnGroupingSets, t.pos, oName)
		return i + 2, true, nil
	}
	return 0, false, nil
}

// groupItemStart says whether the next token starts an item of a GROUP
// BY list (after BY or a comma).
func (n *normalizer) groupItemStart() bool {
	l := n.last()
	return l.text == "," || strings.EqualFold(l.text, "by")
}

// inGroupingSets says whether the innermost parenthesis is a grouping
// set construct's (ROLLUP, CUBE, GROUPING SETS).
func (n *normalizer) inGroupingSets() bool {
	f := n.frame()
	if f.call < 0 {
		return false
	}
	switch n.out[f.call].text {
	case fnRollup, fnCube, fnGroupingSets:
		return true
	}
	return false
}

// renameFunc keeps PostgreSQL's meaning of functions TiDB's grammar
// treats specially: stddev and variance are the sample forms in
// PostgreSQL, the population forms in MySQL (quoted they are plain calls,
// and before OVER stddev_samp and var_samp); concat must not look like ||;
// the others have MySQL-only argument syntax, and quoting the name makes
// TiDB parse a plain call.
func (n *normalizer) renameFunc(i, hi int) (int, bool, error) {
	if !n.at(i+1, hi).isOp("(") || n.prevIsDot(i) {
		return 0, false, nil
	}
	t := n.toks[i]
	switch t.val {
	case "stddev", "variance":
		// Quoted, the call keeps the name it shows as a column's, and
		// over a window it rides on a carrier (overCarrier). TiDB's own
		// names, the sample forms, where its aggregate grammar is
		// needed: f(ALL x), f(x) FILTER (…) OVER w.
		c := n.match(i+1, hi)
		filterOver := false
		if c > 0 && n.at(c+1, hi).is("filter") && n.at(c+2, hi).isOp("(") {
			c2 := n.match(c+2, hi)
			filterOver = c2 > 0 && n.at(c2+1, hi).is("over")
		}
		switch {
		case n.at(i+2, hi).is("all") || filterOver:
			n.put(map[string]string{"stddev": "stddev_samp", "variance": "var_samp"}[t.val], t.pos, oName)
		case c > 0 && n.at(c+1, hi).is("over"):
			return n.overCarrier(i, hi)
		default:
			n.put(quoteIdent(t.val), t.pos, oName)
		}
	case "concat":
		// TiDB turns a || b into concat(a, b); qualify the real one.
		n.put("pg_catalog", t.pos, oName)
		n.put(".", t.pos, oOther)
		n.put("concat", t.pos, oName)
	default:
		n.put(quoteIdent(t.val), t.pos, oName)
	}
	return i + 1, true, nil
}

// This file holds the extended query protocol: prepared statements
// (Parse) and portals (Bind), Describe, Execute with its row limit and
// PortalSuspended, Close and Sync, and the rules for when statements and
// portals are destroyed. Skipping to Sync after an error is done by the
// message loop (conn.processLoop and conn.dispatch, conn.go).

package pgwire

import (
	"context"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
	"github.com/jackc/pgproto3/v2"
)

// prepared is a prepared statement (Parse).
type prepared struct {
	name   string
	sql    string    // its text, for Server.Activity
	stmt   Statement // nil for an empty query
	params []types.Type
	cols   []Column
}

// portal is a bound statement (Bind), possibly partly executed.
type portal struct {
	name   string
	ps     *prepared
	params []types.Value
	fmts   []int16 // effective result format per column (nil: all text)

	// ctx lives as long as the portal: Statement.Execute gets it, and the
	// Result may hold on to it across Execute messages.
	ctx    context.Context
	cancel context.CancelCauseFunc

	res       Result // nil until the first Execute
	suspended bool   // an Execute stopped at its row limit
	done      bool   // the Result reached io.EOF
	tag       string
}

func (c *conn) parse(m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			return pgerror.New(pgerror.DuplicatePreparedStatement, "prepared statement %q already exists", m.Name)
		}
	}
	var stmt Statement
	ps := &prepared{name: m.Name, sql: m.Query}
	err := c.withQueryCtx(func(ctx context.Context) (err error) {
		stmt, err = c.sess.Prepare(ctx, m.Query, m.ParameterOIDs)
		if err != nil || stmt == nil {
			return err
		}
		ps.params = stmt.ParamTypes()
		ps.cols = stmt.Columns()
		return nil
	})
	if err != nil {
		return err
	}
	ps.stmt = stmt
	// Parameters the client declared exist even if the statement does not
	// use them, as in PostgreSQL: Bind must supply them.
	for i := len(ps.params); i < len(m.ParameterOIDs); i++ {
		t, _ := types.ByOID(m.ParameterOIDs[i])
		ps.params = append(ps.params, t)
	}
	if m.Name == "" {
		c.dropStatement("", false)
	}
	c.stmts[m.Name] = ps
	return c.send(&pgproto3.ParseComplete{})
}

// bind creates a portal. Parameters are decoded here, so their errors
// (08P01 counts, 22P02/22P03 values) are reported at Bind as PostgreSQL
// does; the statement itself runs at the first Execute.
func (c *conn) bind(m *pgproto3.Bind) error {
	ps, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return pgerror.New(pgerror.InvalidSQLStatementName, "prepared statement %q does not exist", m.PreparedStatement)
	}
	if m.DestinationPortal != "" {
		if _, ok := c.portals[m.DestinationPortal]; ok {
			return pgerror.New(pgerror.DuplicateCursor, "portal %q already exists", m.DestinationPortal)
		}
	}
	np := len(m.Parameters)
	if nf := len(m.ParameterFormatCodes); nf > 1 && nf != np {
		return pgerror.New(pgerror.ProtocolViolation, "bind message has %d parameter formats but %d parameters", nf, np)
	}
	if np != len(ps.params) {
		return pgerror.New(pgerror.ProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d",
			np, ps.name, len(ps.params))
	}
	var params []types.Value
	if np > 0 {
		params = make([]types.Value, np)
	}
	for i, raw := range m.Parameters {
		if raw == nil {
			continue // NULL
		}
		f := formatCode(m.ParameterFormatCodes, i)
		var v types.Value
		var err error
		switch f {
		case pgproto3.TextFormat:
			v, err = types.ParseText(ps.params[i], string(raw))
		case pgproto3.BinaryFormat:
			v, err = types.ParseBinary(ps.params[i], raw)
			if err != nil && pgerror.CodeOf(err) == pgerror.InvalidBinaryRepresentation {
				err = pgerror.New(pgerror.InvalidBinaryRepresentation, "incorrect binary data format in bind parameter %d", i+1).
					WithDetail("%s", err.Error())
			}
		default:
			return pgerror.New(pgerror.InvalidParameterValue, "unsupported format code: %d", f)
		}
		if err != nil {
			return err
		}
		params[i] = v
	}
	var fmts []int16
	nr := len(m.ResultFormatCodes)
	if nr > 1 && nr != len(ps.cols) {
		return pgerror.New(pgerror.ProtocolViolation, "bind message has %d result formats but query has %d columns", nr, len(ps.cols))
	}
	if nr > 0 && len(ps.cols) > 0 {
		fmts = make([]int16, len(ps.cols))
		for i, col := range ps.cols {
			f := formatCode(m.ResultFormatCodes, i)
			switch f {
			case pgproto3.TextFormat:
			case pgproto3.BinaryFormat:
				if col.Type.HasBinary() {
					fmts[i] = pgproto3.BinaryFormat
				}
			default:
				return pgerror.New(pgerror.InvalidParameterValue, "unsupported format code: %d", f)
			}
		}
	}
	c.dropPortal(m.DestinationPortal)
	p := &portal{name: m.DestinationPortal, ps: ps, params: params, fmts: fmts}
	p.ctx, p.cancel = context.WithCancelCause(c.ctx)
	c.portals[p.name] = p
	return c.send(&pgproto3.BindComplete{})
}

// formatCode applies the protocol's rule for format code lists: none means
// text, one applies to all, otherwise one per item.
func formatCode(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return pgproto3.TextFormat
	case 1:
		return codes[0]
	}
	return codes[i]
}

func (c *conn) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		ps, ok := c.stmts[m.Name]
		if !ok {
			return pgerror.New(pgerror.InvalidSQLStatementName, "prepared statement %q does not exist", m.Name)
		}
		oids := make([]uint32, len(ps.params))
		for i, t := range ps.params {
			oids[i] = t.OID()
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		if ps.cols == nil {
			return c.send(&pgproto3.NoData{})
		}
		return c.send(rowDescription(ps.cols, nil))
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			if cd, ok := c.sess.(CursorDescriber); ok {
				if cols, ok := cd.DescribeCursor(m.Name); ok {
					return c.send(rowDescription(cols, nil))
				}
			}
			return pgerror.New(pgerror.InvalidCursorName, "portal %q does not exist", m.Name)
		}
		if p.ps.cols == nil {
			return c.send(&pgproto3.NoData{})
		}
		return c.send(rowDescription(p.ps.cols, p.fmts))
	}
	return pgerror.New(pgerror.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
}

// execute runs a portal: the first Execute calls Statement.Execute, and
// each Execute sends up to MaxRows rows (0: all). A portal stopped at its
// limit answers PortalSuspended and keeps its Result for the next
// Execute; an exhausted one answers CommandComplete.
func (c *conn) execute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return pgerror.New(pgerror.InvalidCursorName, "portal %q does not exist", m.Portal)
	}
	if p.ps.stmt == nil {
		return c.send(&pgproto3.EmptyQueryResponse{})
	}
	if p.done {
		// PostgreSQL: a finished row-returning portal yields no more rows;
		// a finished command cannot run again.
		if p.ps.cols == nil {
			return pgerror.New(pgerror.ObjectNotInPrerequisiteState, "portal %q cannot be run", p.name)
		}
		return c.send(&pgproto3.CommandComplete{CommandTag: []byte(retag(p.tag, 0))})
	}
	if p.res == nil {
		c.actQuery(p.ps.sql)
	}
	c.setRunning(p.cancel)
	defer c.setRunning(nil)
	err := c.runPortal(p, int(m.MaxRows))
	if err != nil {
		err = c.toPgError(p.ctx, err)
		c.dropPortal(p.name)
	}
	return err
}

func (c *conn) runPortal(p *portal, maxRows int) (err error) {
	defer c.recoverAs(&err)
	if p.res == nil {
		res, err := p.ps.stmt.Execute(p.ctx, p.params)
		if err != nil {
			return err
		}
		if res == nil {
			return pgerror.New(pgerror.Internal, "statement returned no result")
		}
		p.res = res
	}
	var copyErr error
	switch r := p.res.(type) {
	case CopyOutResult:
		// COPY runs to completion whatever the row limit.
		copyErr = c.sendCopyOut(p.ctx, r)
	case CopyInResult:
		copyErr = c.copyIn(p.ctx, r)
	default:
		return c.sendPortalRows(p, maxRows)
	}
	if copyErr != nil {
		return copyErr
	}
	p.tag = p.res.Tag()
	p.done = true
	c.closePortalResult(p)
	return nil
}

// sendPortalRows sends up to maxRows rows of a portal (0: all), then
// PortalSuspended or CommandComplete.
func (c *conn) sendPortalRows(p *portal, maxRows int) error {
	n, eof, err := c.sendRows(p.ctx, p.res, p.ps.cols, p.fmts, maxRows)
	if err != nil {
		return err
	}
	if !eof {
		p.suspended = true
		c.send(&pgproto3.PortalSuspended{})
		return c.w.flush()
	}
	c.sendNotices(p.res)
	p.tag = p.res.Tag()
	p.done = true
	c.closePortalResult(p)
	tag := p.tag
	if p.suspended {
		tag = retag(tag, n)
	}
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}

func (c *conn) closeMsg(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		c.dropStatement(m.Name, true)
	case 'P':
		c.dropPortal(m.Name)
	default:
		return pgerror.New(pgerror.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	return c.send(&pgproto3.CloseComplete{})
}

// sync ends an extended-protocol batch. Portals live until the end of the
// transaction, as in PostgreSQL: outside a transaction block they are all
// destroyed here.
func (c *conn) sync() {
	if c.txStatus() == 'I' {
		c.dropAllPortals()
	}
	c.sendReady()
}

// dropStatement forgets a prepared statement. A Close message also closes
// the portals bound to it (withPortals); replacing the unnamed statement
// does not, as in PostgreSQL.
func (c *conn) dropStatement(name string, withPortals bool) {
	ps, ok := c.stmts[name]
	if !ok {
		return
	}
	delete(c.stmts, name)
	if !withPortals {
		return
	}
	for pn, p := range c.portals {
		if p.ps == ps {
			c.dropPortal(pn)
		}
	}
}

func (c *conn) dropPortal(name string) {
	p, ok := c.portals[name]
	if !ok {
		return
	}
	delete(c.portals, name)
	c.closePortalResult(p)
	p.cancel(errPortalClosed)
}

func (c *conn) dropAllPortals() {
	for name := range c.portals {
		c.dropPortal(name)
	}
}

func (c *conn) closePortalResult(p *portal) {
	if p.res != nil {
		c.closeResult(p.res)
		p.res = nil
	}
}

// retag replaces the row count at the end of a command tag ("SELECT 5",
// "INSERT 0 5") with n; a tag without a trailing count is kept. It gives
// the tag of one Execute of a portal run in several batches, which
// PostgreSQL reports with the rows of that batch only.
func retag(tag string, n int64) string {
	i := strings.LastIndexByte(tag, ' ')
	if i < 0 || i == len(tag)-1 {
		return tag
	}
	for _, c := range tag[i+1:] {
		if c < '0' || c > '9' {
			return tag
		}
	}
	return tag[:i+1] + strconv.FormatInt(n, 10)
}

package catalog

import (
	"context"
	"hash/fnv"
	"sort"

	"github.com/fvsql/fvsql/types"
)

// Roles. fvsql has no roles of its own: every user may do everything
// (is_superuser is on), and relations are owned by the bootstrap role
// fvsql (OID 10, as PostgreSQL numbers its bootstrap superuser). But
// clients look up the user they logged in as (DBeaver's
// `pg_roles WHERE rolname = session_user`), so pg_roles, pg_authid and
// pg_user list a role for each user fvsql knows: fvsql, the users it is
// configured with (SetRoles: the --users list), and the user of every
// connection now open (pg_stat_activity's usename, which covers trust
// authentication, where any name may log in).

// BootstrapRole is the role that owns every relation.
const BootstrapRole = "fvsql"

// Database is the one database fvsql serves: current_database(),
// pg_database's one row, the name a session logs in to.
const Database = "fvsql"

// RoleOID is the OID of a role: 10 for the bootstrap role, and for the
// others a hash of the name in 2^30 .. 2^31-1, so that every process
// and every restart agrees without a roles catalog, and the OID fits a
// signed int4 (clients that read OIDs as int).
func RoleOID(name string) uint32 {
	if name == BootstrapRole {
		return 10
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1<<30 | h.Sum32()&(1<<30-1)
}

// SetRoles declares the users fvsql is configured with (their names):
// roles in pg_roles whether or not they are connected.
func (c *Catalog) SetRoles(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users = append([]string(nil), names...)
}

// roleNames lists the roles, by name: the bootstrap role, the configured
// users and the users of the connections pg_stat_activity lists.
func (c *Catalog) roleNames(ctx context.Context) []string {
	seen := map[string]bool{BootstrapRole: true}
	c.mu.RLock()
	for _, u := range c.users {
		seen[u] = true
	}
	activity := c.dynamic["pg_catalog.pg_stat_activity"]
	c.mu.RUnlock()
	if activity != nil {
		if i := activity.rel.ColumnIndex("usename"); i >= 0 {
			for _, row := range activity.live(ctx) {
				if i < len(row) && !row[i].IsNull() && row[i].S != "" {
					seen[row[i].S] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func init() {
	t := boolean(true)
	password := text("********")
	// pg_roles, in PostgreSQL 15's column order (oid last)
	registerSystemCtx("pg_catalog", "pg_roles", 13505, cols(`rolname name, rolsuper bool, rolinherit bool,
		rolcreaterole bool, rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolconnlimit int4,
		rolpassword text, rolvaliduntil timestamptz, rolbypassrls bool, rolconfig text[], oid oid`),
		func(ctx context.Context, c *Catalog) []types.Row {
			var rows []types.Row
			for _, n := range c.roleNames(ctx) {
				rows = append(rows, types.Row{name(n), t, t, t, t, t, t, i4(-1), password, types.NullValue, t,
					types.NullValue, oid(RoleOID(n))})
			}
			return rows
		})
	systemViews["pg_catalog.pg_roles"] = true
	registerSystemCtx("pg_catalog", "pg_authid", 1260, cols(`oid oid, rolname name, rolsuper bool, rolinherit bool,
		rolcreaterole bool, rolcreatedb bool, rolcanlogin bool, rolreplication bool, rolbypassrls bool,
		rolconnlimit int4, rolpassword text, rolvaliduntil timestamptz`),
		func(ctx context.Context, c *Catalog) []types.Row {
			var rows []types.Row
			for _, n := range c.roleNames(ctx) {
				// the password (a SCRAM verifier in PostgreSQL) is not shown
				rows = append(rows, types.Row{oid(RoleOID(n)), name(n), t, t, t, t, t, t, t, i4(-1),
					types.NullValue, types.NullValue})
			}
			return rows
		})
	registerSystemCtx("pg_catalog", "pg_user", 13506, cols(`usename name, usesysid oid, usecreatedb bool,
		usesuper bool, userepl bool, usebypassrls bool, passwd text, valuntil timestamptz, useconfig text[]`),
		func(ctx context.Context, c *Catalog) []types.Row {
			var rows []types.Row
			for _, n := range c.roleNames(ctx) {
				rows = append(rows, types.Row{name(n), oid(RoleOID(n)), t, t, t, t, password, types.NullValue,
					types.NullValue})
			}
			return rows
		})
	systemViews["pg_catalog.pg_user"] = true
}

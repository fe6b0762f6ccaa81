package server

import (
	"sync"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// The functions over the session running the query: who it is
// (current_user and its synonyms) and its settings (current_setting,
// set_config), which drivers and BI tools read and set in SQL rather than
// with SHOW and SET.

// noSessionUser is current_user where no session runs the expression (a
// pipeline's steps).
const noSessionUser = "fvsql"

// configMu serializes set_config and current_setting: a bounded query may
// evaluate them on several partitions' goroutines at once, and a
// session's settings are otherwise touched only by its own goroutine.
var configMu sync.Mutex

func sessionOf(sess any) *session {
	s, _ := sess.(*session)
	return s
}

func init() {
	userFunc := func(name string) *expr.Func {
		return &expr.Func{Name: name, Ret: types.Name, Volatile: true,
			EvalSession: func(sess any, _ []types.Value) (types.Value, error) {
				if s := sessionOf(sess); s != nil && s.user != "" {
					return types.NewString(types.Name, s.user), nil
				}
				return types.NewString(types.Name, noSessionUser), nil
			}}
	}
	currentSetting := func(sess any, name string, missingOK bool) (types.Value, error) {
		s := sessionOf(sess)
		if s == nil {
			return types.NullValue, pgerror.New(pgerror.FeatureNotSupported, "current_setting runs only in a session's query")
		}
		configMu.Lock()
		v, err := s.setting(name)
		configMu.Unlock()
		if err != nil {
			if missingOK {
				return types.NullValue, nil
			}
			return types.NullValue, err
		}
		return types.NewText(v), nil
	}
	expr.Register(
		// fvsql has no SET ROLE: the session's user is all four.
		userFunc("current_user"), userFunc("session_user"), userFunc("user"),
		&expr.Func{Name: "current_setting", Args: []types.Type{types.Text}, Ret: types.Text, Volatile: true,
			EvalSession: func(sess any, a []types.Value) (types.Value, error) {
				return currentSetting(sess, a[0].S, false)
			}},
		&expr.Func{Name: "current_setting", Args: []types.Type{types.Text, types.Bool}, Ret: types.Text, Volatile: true,
			EvalSession: func(sess any, a []types.Value) (types.Value, error) {
				return currentSetting(sess, a[0].S, a[1].I != 0)
			}},
		// set_config(name, value, is_local) is SET (SET LOCAL when
		// is_local, which fvsql applies to the session as it does SET
		// LOCAL) and returns the new value; a NULL value is RESET's empty
		// value in PostgreSQL, here the setting's default.
		&expr.Func{Name: "set_config", Args: []types.Type{types.Text, types.Text, types.Bool}, Ret: types.Text,
			Volatile: true, NonStrict: true,
			EvalSession: func(sess any, a []types.Value) (types.Value, error) {
				s := sessionOf(sess)
				if s == nil {
					return types.NullValue, pgerror.New(pgerror.FeatureNotSupported, "set_config runs only in a session's query")
				}
				if a[0].IsNull() {
					return types.NullValue, pgerror.New(pgerror.NullValueNotAllowed, "SET requires parameter name")
				}
				value := "default"
				if !a[1].IsNull() {
					value = a[1].S
				}
				configMu.Lock()
				defer configMu.Unlock()
				if err := s.set(a[0].S, value); err != nil {
					return types.NullValue, err
				}
				v, err := s.setting(a[0].S)
				if err != nil {
					return types.NullValue, err
				}
				return types.NewText(v), nil
			}},
	)
}

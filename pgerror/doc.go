// Package pgerror carries PostgreSQL SQLSTATE codes on Go errors.
//
// A client-facing error gets its code where it is created (pgerror.New,
// pgerror.Wrap), and travels up unchanged through the planner, the engine
// and the server to the wire, where pgwire turns it into an ErrorResponse.
// Errors without a code reach clients as XX000 (internal_error).
//
// Tests check codes with pgerror.CodeOf or errors.Is against the sentinel
// values, never the message text.
package pgerror

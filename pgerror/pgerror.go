package pgerror

import (
	"context"
	"errors"
	"fmt"
)

// SQLSTATE codes used by fvsql. Names follow PostgreSQL's errcodes.txt.
const (
	SuccessfulCompletion         = "00000"
	ConnectionException          = "08000"
	SQLClientUnableToEstablish   = "08001"
	ProtocolViolation            = "08P01"
	FeatureNotSupported          = "0A000"
	CardinalityViolation         = "21000"
	DataException                = "22000"
	StringDataRightTruncation    = "22001"
	NumericValueOutOfRange       = "22003"
	InvalidDatetimeFormat        = "22007"
	DatetimeFieldOverflow        = "22008"
	DivisionByZero               = "22012"
	InvalidParameterValue        = "22023"
	InvalidTextRepresentation    = "22P02"
	InvalidBinaryRepresentation  = "22P03"
	CharacterNotInRepertoire     = "22021"
	NullValueNotAllowed          = "22004"
	InvalidEscapeSequence        = "22025"
	NotNullViolation             = "23502"
	InvalidCursorState           = "24000"
	InvalidTransactionState      = "25000"
	InvalidSQLStatementName      = "26000"
	InvalidAuthorizationSpec     = "28000"
	InvalidPassword              = "28P01"
	InvalidCursorName            = "34000"
	SyntaxError                  = "42601"
	InsufficientPrivilege        = "42501"
	UndefinedColumn              = "42703"
	UndefinedFunction            = "42883"
	UndefinedTable               = "42P01"
	UndefinedParameter           = "42P02"
	UndefinedObject              = "42704"
	DuplicateObject              = "42710"
	DuplicateTable               = "42P07"
	DuplicateColumn              = "42701"
	DuplicateCursor              = "42P03"
	DuplicatePreparedStatement   = "42P05"
	AmbiguousColumn              = "42702"
	DatatypeMismatch             = "42804"
	GroupingError                = "42803"
	WindowingError               = "42P20"
	InvalidColumnReference       = "42P10"
	WrongObjectType              = "42809"
	InvalidObjectDefinition      = "42P17"
	IndeterminateDatatype        = "42P18"
	ProgramLimitExceeded         = "54000"
	ObjectNotInPrerequisiteState = "55000"
	QueryCanceled                = "57014"
	AdminShutdown                = "57P01"
	CannotConnectNow             = "57P03"
	IOError                      = "58030"
	SystemError                  = "58000"
	ConfigFileError              = "F0000"
	Internal                     = "XX000"
)

// Error is an error with a SQLSTATE code and the optional fields of a
// PostgreSQL ErrorResponse.
type Error struct {
	Code     string
	Message  string
	Detail   string
	Hint     string
	Position int // 1-based character position in the query; 0 when unknown
	cause    error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the wrapped cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, pgerror.New(pgerror.UndefinedTable, "")) matches by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// New returns an error with the given code and formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap gives err a code and a message prefix; the cause stays reachable
// through errors.Unwrap. An err that already carries a code keeps it.
func Wrap(err error, code, format string, args ...any) error {
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf(format, args...)
	var pe *Error
	if errors.As(err, &pe) {
		c := *pe
		if msg != "" {
			c.Message = msg + ": " + pe.Message
		}
		c.cause = err
		return &c
	}
	if msg != "" {
		msg += ": "
	}
	return &Error{Code: code, Message: msg + err.Error(), cause: err}
}

// WithCode gives err a code unless it already has one.
func WithCode(err error, code string) error { return Wrap(err, code, "") }

// WithPosition returns a copy of err with its query position set.
func WithPosition(err error, pos int) error {
	var pe *Error
	if !errors.As(err, &pe) {
		return err
	}
	c := *pe
	c.Position = pos
	return &c
}

// WithDetail returns a copy of e with Detail set.
func (e *Error) WithDetail(format string, args ...any) *Error {
	c := *e
	c.Detail = fmt.Sprintf(format, args...)
	return &c
}

// WithHint returns a copy of e with Hint set.
func (e *Error) WithHint(format string, args ...any) *Error {
	c := *e
	c.Hint = fmt.Sprintf(format, args...)
	return &c
}

// Code returns the SQLSTATE of err: its own code, 57014 for a cancelled
// context, or XX000.
func Code(err error) string {
	if err == nil {
		return SuccessfulCompletion
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return QueryCanceled
	}
	return Internal
}

// Flatten returns err as an *Error, giving it XX000 when it has no code.
func Flatten(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Code: Code(err), Message: err.Error(), cause: err}
}

// NotSupported is the error for statements and constructs that parse but
// fvsql does not run yet.
func NotSupported(format string, args ...any) *Error {
	e := New(FeatureNotSupported, format, args...)
	e.Message += " is not supported yet"
	return e
}

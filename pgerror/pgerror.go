package pgerror

import (
	"context"
	"errors"
	"fmt"
)

// Code is a SQLSTATE, as PostgreSQL's errcodes.txt lists them. It is a
// struct so that a code is always one of the named values below (or made
// on purpose with MakeCode), never a stray string literal.
type Code struct{ s string }

// MakeCode returns the Code for a five-character SQLSTATE. Code outside
// this package uses the named values; MakeCode is for codes that arrive
// from elsewhere (a stored error report, a test table).
func MakeCode(sqlstate string) Code { return Code{sqlstate} }

// String returns the five-character SQLSTATE.
func (c Code) String() string { return c.s }

// SQLSTATE codes used by fvsql. Names follow PostgreSQL's errcodes.txt.
var (
	SuccessfulCompletion         = MakeCode("00000")
	ConnectionException          = MakeCode("08000")
	SQLClientUnableToEstablish   = MakeCode("08001")
	ConnectionFailure            = MakeCode("08006")
	ProtocolViolation            = MakeCode("08P01")
	FeatureNotSupported          = MakeCode("0A000")
	CardinalityViolation         = MakeCode("21000")
	DataException                = MakeCode("22000")
	StringDataRightTruncation    = MakeCode("22001")
	NumericValueOutOfRange       = MakeCode("22003")
	NullValueNotAllowed          = MakeCode("22004")
	InvalidDatetimeFormat        = MakeCode("22007")
	DatetimeFieldOverflow        = MakeCode("22008")
	SubstringError               = MakeCode("22011")
	DivisionByZero               = MakeCode("22012")
	InvalidPrecedingOrFollowing  = MakeCode("22013")
	InvalidArgumentForNtile      = MakeCode("22014")
	InvalidArgumentForNthValue   = MakeCode("22016")
	InvalidRegularExpression     = MakeCode("2201B")
	InvalidArgumentForLogarithm  = MakeCode("2201E")
	InvalidArgumentForPowerFunc  = MakeCode("2201F")
	InvalidRowCountInLimitClause = MakeCode("2201W")
	CharacterNotInRepertoire     = MakeCode("22021")
	InvalidParameterValue        = MakeCode("22023")
	InvalidEscapeSequence        = MakeCode("22025")
	InvalidTextRepresentation    = MakeCode("22P02")
	InvalidBinaryRepresentation  = MakeCode("22P03")
	BadCopyFileFormat            = MakeCode("22P04")
	NotNullViolation             = MakeCode("23502")
	InvalidCursorState           = MakeCode("24000")
	InvalidTransactionState      = MakeCode("25000")
	InFailedSQLTransaction       = MakeCode("25P02")
	NoActiveSQLTransaction       = MakeCode("25P01")
	InvalidSavepointSpec         = MakeCode("3B001")
	InvalidSQLStatementName      = MakeCode("26000")
	InvalidAuthorizationSpec     = MakeCode("28000")
	InvalidPassword              = MakeCode("28P01")
	DependentObjectsStillExist   = MakeCode("2BP01")
	InvalidCursorName            = MakeCode("34000")
	ExternalRoutineException     = MakeCode("38000")
	InvalidCatalogName           = MakeCode("3D000")
	InvalidSchemaName            = MakeCode("3F000")
	InsufficientPrivilege        = MakeCode("42501")
	SyntaxError                  = MakeCode("42601")
	DuplicateColumn              = MakeCode("42701")
	AmbiguousColumn              = MakeCode("42702")
	UndefinedColumn              = MakeCode("42703")
	UndefinedObject              = MakeCode("42704")
	DuplicateObject              = MakeCode("42710")
	GroupingError                = MakeCode("42803")
	DatatypeMismatch             = MakeCode("42804")
	WrongObjectType              = MakeCode("42809")
	UndefinedFunction            = MakeCode("42883")
	UndefinedTable               = MakeCode("42P01")
	UndefinedParameter           = MakeCode("42P02")
	DuplicateCursor              = MakeCode("42P03")
	DuplicatePreparedStatement   = MakeCode("42P05")
	DuplicateTable               = MakeCode("42P07")
	DuplicateFunction            = MakeCode("42723")
	InvalidFunctionDefinition    = MakeCode("42P13")
	InvalidColumnReference       = MakeCode("42P10")
	InvalidObjectDefinition      = MakeCode("42P17")
	IndeterminateDatatype        = MakeCode("42P18")
	InvalidRecursion             = MakeCode("42P19")
	WindowingError               = MakeCode("42P20")
	OutOfMemory                  = MakeCode("53200")
	TooManyConnections           = MakeCode("53300")
	ProgramLimitExceeded         = MakeCode("54000")
	ObjectNotInPrerequisiteState = MakeCode("55000")
	CantChangeRuntimeParam       = MakeCode("55P02")
	QueryCanceled                = MakeCode("57014")
	AdminShutdown                = MakeCode("57P01")
	CannotConnectNow             = MakeCode("57P03")
	SystemError                  = MakeCode("58000")
	IOError                      = MakeCode("58030")
	UndefinedFile                = MakeCode("58P01")
	ConfigFileError              = MakeCode("F0000")
	Internal                     = MakeCode("XX000")
)

// Error is an error with a SQLSTATE code and the optional fields of a
// PostgreSQL ErrorResponse.
type Error struct {
	Code     Code
	Message  string
	Detail   string
	Hint     string
	Position int // 1-based character position in the query; 0 when unknown
	// Where is the context the error arose in (the ErrorResponse's W
	// field, psql's CONTEXT: "COPY s, line 3, column b: \"x\"").
	Where string
	cause error
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
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap gives err a code and a message prefix; the cause stays reachable
// through errors.Unwrap. An err that already carries a code keeps it.
func Wrap(err error, code Code, format string, args ...any) error {
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
func WithCode(err error, code Code) error { return Wrap(err, code, "") }

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

// WithWhere returns a copy of e with Where (the CONTEXT) set.
func (e *Error) WithWhere(format string, args ...any) *Error {
	c := *e
	c.Where = fmt.Sprintf(format, args...)
	return &c
}

// CodeOf returns the SQLSTATE of err: its own code, 57014 for a cancelled
// context, or XX000.
func CodeOf(err error) Code {
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
	return &Error{Code: CodeOf(err), Message: err.Error(), cause: err}
}

// NotSupported is the error for statements and constructs that parse but
// fvsql does not run yet.
func NotSupported(format string, args ...any) *Error {
	e := New(FeatureNotSupported, format, args...)
	e.Message += " is not supported yet"
	return e
}

package commands

// Writer receives one command's reply. It is the narrow interface between
// commands and the wire: the resp package implements it over a connection's
// output buffer, in RESP2 or RESP3 as the client negotiated. Byte slices
// passed in are copied before the call returns.
type Writer interface {
	// Proto is the negotiated protocol version, 2 or 3.
	Proto() int
	Simple(s string)
	// Error writes s verbatim after '-'; CR and LF become spaces, as Redis
	// does.
	Error(s string)
	Int(n int64)
	Bulk(b []byte)
	BulkString(s string)
	// Null is a missing value: $-1 in RESP2, _ in RESP3.
	Null()
	// NullArray is a missing aggregate: *-1 in RESP2, _ in RESP3.
	NullArray()
	Array(n int)
	// Map starts n key/value pairs: %n in RESP3, an array of 2n in RESP2.
	Map(n int)
	// Set starts n members: ~n in RESP3, an array in RESP2.
	Set(n int)
	// Double is a floating-point value as Redis 7.0 writes one, printf's
	// %.17g: a bulk string in RESP2, a double (',') in RESP3.
	Double(f float64)
	// Verbatim is text for humans (INFO, CLIENT LIST): a verbatim string
	// in RESP3, a bulk string in RESP2.
	Verbatim(s string)
	// Push starts an out-of-band message of n elements (pub/sub): >n in
	// RESP3, an array in RESP2.
	Push(n int)
}

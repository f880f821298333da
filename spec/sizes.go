package spec

// Sizes an implementation breaks at. No seed states a size limit, but an
// implementation has them (issue 26 item 6): a lookup chunked by 50, a
// LIMIT 100 applied before a filter, SQLite's bound parameters, a value of
// several MiB, a counter kept in 8 or 16 bits. The specs and the workloads' big
// draws pass each; none is a rule, so no backend fails for keeping within
// one, only for answering wrong past it.
const (
	// LookupChunk is a lookup chunked by this many keys.
	LookupChunk = 50
	// ScanLimit is a LIMIT applied before a filter.
	ScanLimit = 100
	// MaxBoundParams is SQLite's default bound on a statement's parameters
	// (SQLITE_MAX_VARIABLE_NUMBER, 32,766 since 3.32): an IN list of every
	// key asked breaks past it.
	MaxBoundParams = 32_766
	// BigValue is a value of several MiB: as base64 (4/3 of it) it leaves
	// most of the protocol's 16 MiB line (docs/protocol.md) free.
	BigValue = 4 << 20
	// Counter8 is the largest count 8 bits keep.
	Counter8 = 255
	// Counter16 is the largest count 16 bits keep.
	Counter16 = 65_535
)

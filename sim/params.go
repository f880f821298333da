package sim

// DefaultParams is the size of a schedule when Params leaves it unset: the
// defaults the command line shows for --steps, --clients and --processes.
func DefaultParams() Params { return Params{}.withDefaults() }

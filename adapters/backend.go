package adapters

import (
	"context"
	"fmt"

	"github.com/storecheck/storecheck/spec"
)

// Backend is a backend as the kit sees it: the stores it implements and the
// capabilities it declares (its hello), and a way to open a Target of one
// store on a file or in memory. It is a set of Go stores in this process
// (InProcess) or a program speaking the wire protocol (Exec).
type Backend interface {
	// Info is what the backend declared: name, stores, capabilities.
	Info() Hello
	// Open opens a Target of store: on o.Path, or in memory when o.Path is
	// "". o.Clock is the only time the store may use.
	Open(ctx context.Context, store string, o spec.OpenOptions) (Target, error)
	// Close releases the backend (an Exec backend's process ends).
	Close() error
}

// Opener opens one store's Target.
type Opener func(ctx context.Context, o spec.OpenOptions) (Target, error)

// inProcess is a Backend of Go stores in this process.
type inProcess struct {
	info    Hello
	openers map[string]Opener
}

// InProcess is a Backend of Go stores in this process: info declares its
// name and capabilities (its Version and Stores are filled in), openers open
// each store it implements, by store name.
func InProcess(info Hello, openers map[string]Opener) Backend {
	info.Version = ProtocolVersion
	info.Stores = nil
	for _, c := range Contracts {
		if openers[c.Name] != nil {
			info.Stores = append(info.Stores, c.Name)
		}
	}
	return &inProcess{info: info, openers: openers}
}

func (b *inProcess) Info() Hello { return b.info }

func (b *inProcess) Open(ctx context.Context, store string, o spec.OpenOptions) (Target, error) {
	open := b.openers[store]
	if open == nil {
		return nil, fmt.Errorf("backend %s does not implement store %q", b.info.Name, store)
	}
	return open(ctx, o)
}

func (b *inProcess) Close() error { return nil }

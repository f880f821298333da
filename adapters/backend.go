package adapters

import (
	"context"
	"fmt"

	"github.com/storecheck/storecheck/spec"
)

// Driver is a backend as the kit sees it: the stores it implements and the
// capabilities it declares (its hello), and a way to open a Target of one
// store on a file or in memory. It is a set of Go stores in this process
// (InProcess) or a program speaking the wire protocol (Exec).
type Driver interface {
	// Info is what the backend declared: name, stores, capabilities.
	Info() Hello
	// Contract is the contract the backend speaks store by (false: it
	// implements no such store).
	Contract(store string) (spec.Contract, bool)
	// Open opens a Target of store: on o.Path, or in memory when o.Path is
	// "". o.Clock is the only time the store may use.
	Open(ctx context.Context, store string, o spec.OpenOptions) (Target, error)
	// Close releases the backend (an Exec backend's process ends).
	Close() error
}

// SchemaWriter is a Driver that writes, at path, a new file of store that
// its own open reads as carrying marker at version (the capability
// client_schema_writer, the request write_foreign_schema).
type SchemaWriter interface {
	WriteForeignSchema(ctx context.Context, store, path, marker string, version int) error
}

// Opener opens one store's Target.
type Opener func(ctx context.Context, o spec.OpenOptions) (Target, error)

// LocalStore is one store of an InProcess backend: its contract, and how
// to open it.
type LocalStore struct {
	Contract spec.Contract
	Open     Opener
	// WriteSchema, when set, writes at path a new file of this store that
	// Open reads as carrying marker at version (see SchemaWriter).
	WriteSchema func(ctx context.Context, path, marker string, version int) error
}

// inProcess is a Driver of Go stores in this process.
type inProcess struct {
	info   Hello
	stores []LocalStore
}

// InProcess is a Driver of Go stores in this process: info declares its
// name and capabilities (its Version and Stores are filled in), stores are
// the stores it implements, in order.
func InProcess(info Hello, stores ...LocalStore) Driver {
	info.Version = ProtocolVersion
	info.Stores = nil
	for _, s := range stores {
		info.Stores = append(info.Stores, s.Contract.Name)
	}
	return &inProcess{info: info, stores: stores}
}

func (b *inProcess) Info() Hello { return b.info }

func (b *inProcess) store(name string) (LocalStore, bool) {
	for _, s := range b.stores {
		if s.Contract.Name == name {
			return s, true
		}
	}
	return LocalStore{}, false
}

func (b *inProcess) Contract(store string) (spec.Contract, bool) {
	s, ok := b.store(store)
	return s.Contract, ok
}

// Open opens store's Target; an o.Timeout bounds the open through its
// context, as it bounds a Go store's wait for a lock.
func (b *inProcess) Open(ctx context.Context, store string, o spec.OpenOptions) (Target, error) {
	s, ok := b.store(store)
	if !ok {
		return nil, fmt.Errorf("backend %s does not implement store %q", b.info.Name, store)
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	t, err := s.Open(ctx, o)
	if d, ok := t.(interface{ declare([]string) }); ok && err == nil {
		d.declare(b.info.Capabilities.CrashPoints[store])
	}
	return t, err
}

func (b *inProcess) Close() error { return nil }

// WriteForeignSchema writes the file with the store's WriteSchema.
func (b *inProcess) WriteForeignSchema(ctx context.Context, store, path, marker string, version int) error {
	s, ok := b.store(store)
	if !ok || s.WriteSchema == nil {
		return spec.Errorf(spec.ErrBadRequest, "write_foreign_schema: backend %s writes no %q file", b.info.Name, store)
	}
	return s.WriteSchema(ctx, path, marker, version)
}

// contractIn finds store's contract among cs.
func contractIn(cs []spec.Contract, store string) (spec.Contract, bool) {
	for _, c := range cs {
		if c.Name == store {
			return c, true
		}
	}
	return spec.Contract{}, false
}

// clip is b as a string, cut to n bytes.
func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%s... (%d bytes)", b[:n], len(b))
	}
	return string(b)
}

package main

import (
	"bytes"
	"context"
	"io"
	"time"

	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec/suite"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ConfigFile is the file storecheck reads from the folder it runs in, when
// there is one and no --config names another.
const ConfigFile = "storecheck.json"

// Config is what a CI job would otherwise repeat on every command line:
// the stores to check, the backend, the capabilities to leave out, and the
// budgets. A flag on the command line wins over the file.
type Config struct {
	// Stores to check (--store).
	Stores []string `json:"stores,omitempty"`
	// Backend is the command of a program speaking the wire protocol, as
	// after "--".
	Backend []string `json:"backend,omitempty"`
	// Capabilities can withdraw a capability the backend declares (false);
	// they never add one: the backend's hello is the authority.
	Capabilities map[string]bool `json:"capabilities,omitempty"`
	// Budgets.
	Seeds     string `json:"seeds,omitempty"`
	Steps     int    `json:"steps,omitempty"`
	Clients   int    `json:"clients,omitempty"`
	Processes int    `json:"processes,omitempty"`
	Ops       int    `json:"ops,omitempty"`
	Timeout   string `json:"timeout,omitempty"`
	ReportDir string `json:"report_dir,omitempty"`
	FailFast  bool   `json:"fail_fast,omitempty"`
}

// capabilityNames are the capabilities a config may withdraw.
var capabilityNames = []string{"files", "shared_files", "in_memory", "sqlite_locking", "client_schema_table"}

// loadConfig takes --config FILE off args (before any "--") and reads it,
// or reads ./storecheck.json when it exists; nil when there is none.
func loadConfig(args []string) ([]string, *Config, error) {
	path, explicit := "", false
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	for i := 0; i < end; i++ {
		a := args[i]
		if a == "--config" || a == "-config" {
			if i+1 >= end {
				return nil, nil, errors.New("--config needs a file")
			}
			path, explicit = args[i+1], true
			args = slices.Delete(slices.Clone(args), i, i+2)
			break
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			path, explicit = v, true
			args = slices.Delete(slices.Clone(args), i, i+1)
			break
		}
	}
	if !explicit {
		if _, err := os.Stat(ConfigFile); err != nil {
			return args, nil, nil
		}
		path = ConfigFile
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	for name := range c.Capabilities {
		if !slices.Contains(capabilityNames, name) {
			return nil, nil, fmt.Errorf("%s: unknown capability %q; accepted: %s", path, name, strings.Join(capabilityNames, ", "))
		}
	}
	return args, &c, nil
}

// apply sets the flags of fs that the config gives a value, before the
// command line is parsed (so that a flag given there wins).
func (c *Config) apply(fs *flag.FlagSet) error {
	if c == nil {
		return nil
	}
	set := func(name, value string) error {
		if fs.Lookup(name) == nil || value == "" {
			return nil
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("config %s: invalid value %q: %w", name, value, err)
		}
		return nil
	}
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	for _, kv := range [][2]string{
		{"store", strings.Join(c.Stores, ",")}, {"seeds", c.Seeds}, {"steps", num(c.Steps)}, {"clients", num(c.Clients)},
		{"processes", num(c.Processes)}, {"ops", num(c.Ops)}, {"timeout", c.Timeout}, {"report-dir", c.ReportDir},
	} {
		if err := set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if c.FailFast {
		return set("fail-fast", "true")
	}
	return nil
}

// backend is the command line's backend, or else the config's.
func (c *Config) backend(command []string) []string {
	if command == nil && c != nil && len(c.Backend) > 0 {
		return c.Backend
	}
	return command
}

// withdraw turns off the capabilities the config withdraws.
func (c *Config) withdraw(caps suite.Capabilities) suite.Capabilities {
	if c == nil {
		return caps
	}
	for name, on := range c.Capabilities {
		if on {
			continue
		}
		switch name {
		case "files":
			caps.Files = false
		case "shared_files":
			caps.SharedFiles = false
		case "in_memory":
			caps.InMemory = false
		case "sqlite_locking":
			caps.SQLiteLocking = false
		case "client_schema_table":
			caps.ClientSchemaTable = false
		}
	}
	return caps
}

// harnessFor is h, or, when a backend command is given, the harness of that
// program through the exec adapter (the caller closes it); either way with
// the capabilities the config withdraws taken off.
func harnessFor(h suite.Harness, command []string, timeout time.Duration, verbose bool, stderr io.Writer) (suite.Harness, *adapters.Exec, error) {
	var backend *adapters.Exec
	if command != nil {
		o := adapters.ExecOptions{Command: command, Timeout: timeout}
		if verbose {
			o.Stderr = stderr
		}
		var err error
		if backend, err = adapters.StartExec(context.Background(), o); err != nil {
			return h, nil, err
		}
		h = adapters.Harness(backend)
	}
	h.Capabilities = config.withdraw(h.Capabilities)
	return h, backend, nil
}

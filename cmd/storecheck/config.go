package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/storecheck/storecheck/spec"
)

// ConfigFile is the file storecheck reads from the folder it runs in, when
// there is one and no --config names another.
const ConfigFile = "storecheck.json"

// Config is what a CI job would otherwise repeat on every command line:
// any option, under its snake_case name (ConfigKey: "stores" for --store,
// as a list or a comma-separated string), and two keys that are not flags:
// the backend, and the capabilities to withdraw. A flag on the command line
// wins over the file.
type Config struct {
	// Backend is the command of a program speaking the wire protocol, as
	// after "--".
	Backend []string
	// Capabilities can withdraw a capability the backend declares (false);
	// they never add one: the backend's hello is the authority.
	Capabilities map[string]bool
	// values are the options the file sets, by option name, as the command
	// line would spell them; keys are how the file named them.
	values map[string]string
	keys   map[string]string
}

// capabilityNames are the capabilities a config may withdraw.
var capabilityNames = []string{"files", "shared_files", "in_memory", "sqlite_locking", "client_schema_table", "concurrent_requests"}

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
	c, err := parseConfig(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return args, c, nil
}

// parseConfig reads a config file's JSON: every key an option's or one of
// the two others, every value of its option's kind.
func parseConfig(b []byte) (*Config, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	c := &Config{values: map[string]string{}, keys: map[string]string{}}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := raw[key]
		switch key {
		case "backend":
			if err := spec.StrictUnmarshal(v, &c.Backend); err != nil {
				return nil, fmt.Errorf("backend: want a list of strings: %w", err)
			}
			continue
		case "capabilities":
			if err := spec.StrictUnmarshal(v, &c.Capabilities); err != nil {
				return nil, fmt.Errorf("capabilities: want an object of booleans: %w", err)
			}
			for name := range c.Capabilities {
				if !slices.Contains(capabilityNames, name) {
					return nil, fmt.Errorf("unknown capability %q; accepted: %s", name, strings.Join(capabilityNames, ", "))
				}
			}
			continue
		}
		o, ok := optionOfKey(key)
		if !ok {
			return nil, fmt.Errorf("unknown field %q; accepted: %s", key, strings.Join(configKeys(), ", "))
		}
		text, err := configText(v)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", key, err)
		}
		if err := o.Check(text); err != nil {
			return nil, fmt.Errorf("config %s: invalid value %q: %w", key, text, err)
		}
		c.values[o.Name], c.keys[o.Name] = text, key
	}
	return c, nil
}

// optionOfKey is the option a config key names (or an older spelling of
// it: its alias's key); a knob no command takes (one of go test's) has
// none.
func optionOfKey(key string) (option, bool) {
	for _, o := range options {
		if len(o.Commands) > 0 && (o.ConfigKey() == key || (o.Alias != "" && o.AliasKey() == key)) {
			return o, true
		}
	}
	return option{}, false
}

// configKeys are the keys a config file may hold.
func configKeys() []string {
	keys := []string{"backend", "capabilities"}
	for _, o := range options {
		if len(o.Commands) > 0 {
			keys = append(keys, o.ConfigKey())
		}
	}
	return keys
}

// configText is a JSON value as the command line spells it: a string as it
// is, a number or a boolean as written, a list of strings joined with
// commas.
func configText(v json.RawMessage) (string, error) {
	var decoded any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&decoded); err != nil {
		return "", err
	}
	switch x := decoded.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case []any:
		var parts []string
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return "", fmt.Errorf("want a list of strings, got %s", v)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a string, a number, a boolean or a list of strings, got %s", v)
}

// apply sets the flags of f that the config gives a value, before the
// command line is parsed (so that a flag given there wins).
func (c *Config) apply(f *flags) error {
	if c == nil {
		return nil
	}
	for name, text := range c.values {
		v, ok := f.vals[name]
		if !ok {
			continue
		}
		v.setting = fromConfig
		err := v.Set(text)
		v.setting = fromCommandLine
		if err != nil {
			return fmt.Errorf("config %s: invalid value %q: %w", c.keys[name], text, err)
		}
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

// Package layers holds no code: its test states how storecheck's packages
// may depend on each other, and fails when an import crosses a layer.
package layers

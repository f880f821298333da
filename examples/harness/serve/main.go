// Command serve is the example store (../mystore) as a backend over the
// wire protocol, for any tool that speaks it:
//
//	go build -o mystore ./examples/harness/serve
//	go run ./cmd/storecheck sim -- ./mystore
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/examples/harness/mystore"
)

func main() {
	b := conformance.InProcess(mystore.Harness(mystore.Options{}))
	if err := conformance.Serve(context.Background(), b, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

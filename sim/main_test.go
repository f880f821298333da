package sim

import (
	"os"
	"testing"

	"github.com/storecheck/storecheck/internal/testmain"
)

func TestMain(m *testing.M) { os.Exit(testmain.OnTmpfs(m.Run)) }

//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package corpus

import (
	"errors"
	"os"
)

var errNoFlock = errors.New("run directory locking needs flock, which this platform lacks")

func flockFile(*os.File) (bool, error) { return false, errNoFlock }

func funlockFile(*os.File) error { return nil }

func syncUnsupported(error) bool { return false }

//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package fsys

import (
	"errors"
	"os"
)

var errNoFlock = errors.New("file locking needs flock, which this platform lacks")

func flock(*os.File) (bool, error) { return false, errNoFlock }

func flockShared(*os.File) (bool, error) { return false, errNoFlock }

func funlock(*os.File) error { return nil }

func syncUnsupported(error) bool { return false }

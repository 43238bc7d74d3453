//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsys

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// flock takes an exclusive, non-blocking flock on f. The kernel drops it when
// the last descriptor closes, also when the process is killed.
func flock(f *os.File) (held bool, err error) { return flockHow(f, syscall.LOCK_EX) }

// flockShared takes a shared, non-blocking flock on f.
func flockShared(f *os.File) (held bool, err error) { return flockHow(f, syscall.LOCK_SH) }

func flockHow(f *os.File, how int) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	return false, nil
}

func funlock(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return fmt.Errorf("unlocking %s: %w", f.Name(), err)
	}
	return nil
}

func syncUnsupported(err error) bool {
	return errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EINVAL)
}

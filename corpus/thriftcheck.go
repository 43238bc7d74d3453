package corpus

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// checkCompactStruct walks one thrift compact-protocol struct without
// building it and fails if any list, map or string claims more elements or
// bytes than remain. parquet-go v0.32.0 allocates the claimed length first,
// so a damaged footer could otherwise ask for gigabytes and kill the process
// with an unrecoverable out-of-memory error.
func checkCompactStruct(b []byte) error {
	c := compactChecker{b: b}
	return c.structure(0)
}

type compactChecker struct {
	b   []byte
	off int
}

var errThriftShort = errors.New("thrift data ends early")

const maxThriftDepth = 64

func (c *compactChecker) left() int { return len(c.b) - c.off }

func (c *compactChecker) byte() (byte, error) {
	if c.off >= len(c.b) {
		return 0, errThriftShort
	}
	c.off++
	return c.b[c.off-1], nil
}

func (c *compactChecker) uvarint() (uint64, error) {
	v, n := binary.Uvarint(c.b[c.off:])
	if n <= 0 {
		return 0, errors.New("bad thrift varint")
	}
	c.off += n
	return v, nil
}

func (c *compactChecker) skip(n uint64) error {
	if n > uint64(c.left()) {
		return fmt.Errorf("thrift value claims %d bytes, %d remain", n, c.left())
	}
	c.off += int(n)
	return nil
}

// count checks that n elements can fit: every element takes a byte or more.
func (c *compactChecker) count(n uint64) error {
	if n > uint64(c.left()) {
		return fmt.Errorf("thrift collection claims %d elements, %d bytes remain", n, c.left())
	}
	return nil
}

func (c *compactChecker) structure(depth int) error {
	if depth > maxThriftDepth {
		return errors.New("thrift data nests too deep")
	}
	for {
		h, err := c.byte()
		if err != nil {
			return err
		}
		typ := h & 0x0f
		if typ == 0 { // stop
			return nil
		}
		if h>>4 == 0 { // long form: the field id follows as a zigzag varint
			if _, err := c.uvarint(); err != nil {
				return err
			}
		}
		if typ == 1 || typ == 2 { // booleans live in the field header
			continue
		}
		if err := c.value(typ, depth); err != nil {
			return err
		}
	}
}

func (c *compactChecker) value(typ byte, depth int) error {
	switch typ {
	case 1, 2, 3: // a boolean inside a collection, or a byte
		return c.skip(1)
	case 4, 5, 6: // i16, i32, i64
		_, err := c.uvarint()
		return err
	case 7: // double
		return c.skip(8)
	case 8: // binary
		n, err := c.uvarint()
		if err != nil {
			return err
		}
		return c.skip(n)
	case 9, 10: // list, set
		h, err := c.byte()
		if err != nil {
			return err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = c.uvarint(); err != nil {
				return err
			}
		}
		if err := c.count(n); err != nil {
			return err
		}
		for range n {
			if err := c.value(h&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 11: // map
		n, err := c.uvarint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := c.byte()
		if err != nil {
			return err
		}
		if err := c.count(n); err != nil {
			return err
		}
		for range n {
			if err := c.value(kv>>4, depth+1); err != nil {
				return err
			}
			if err := c.value(kv&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 12:
		return c.structure(depth + 1)
	case 13: // uuid
		return c.skip(16)
	default:
		return fmt.Errorf("unknown thrift type %d", typ)
	}
}

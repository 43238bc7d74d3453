package corpus

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// keptZstd is the zstd codec of the parquet files this package writes,
// with the settings of parquet.Zstd (the same bytes) but one encoder kept
// for the codec's life: a Run's for its shards, an export's for all its
// data files. parquet.Zstd keeps its encoders in a sync.Pool, which the
// garbage collector empties, so a writer between collections builds a new
// encoder with tables of about 1.5 MB (BenchmarkCheckpoints: half the bytes
// allocated per run of 40 small shards; BenchmarkExport: see its commit).
// The codec is not shared further: an encoder holds a channel, which must
// not outlive the synctest bubble a test made it in. Decoding is
// parquet.Zstd's.
type keptZstd struct {
	mu  sync.Mutex
	enc *zstd.Encoder
}

func (c *keptZstd) String() string                            { return parquet.Zstd.String() }
func (c *keptZstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *keptZstd) Encode(dst, src []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.enc == nil {
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false),
		)
		if err != nil {
			return nil, fmt.Errorf("creating the zstd encoder of a parquet writer: %w", err)
		}
		c.enc = enc
	}
	return c.enc.EncodeAll(src, dst[:0]), nil
}

func (c *keptZstd) Decode(dst, src []byte) ([]byte, error) { return parquet.Zstd.Decode(dst, src) }

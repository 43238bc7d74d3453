package corpus

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// shardCodec is the zstd codec of a Run's shard writers, with the settings
// of parquet.Zstd but one encoder kept for the Run's life. parquet.Zstd
// keeps its encoders in a sync.Pool, which the garbage collector empties,
// so a writer between collections builds a new encoder with tables of
// several megabytes (BenchmarkCheckpoints: half the bytes allocated per
// run of 40 small shards). Decoding is parquet.Zstd's.
type shardCodec struct {
	mu  sync.Mutex
	enc *zstd.Encoder
}

func (c *shardCodec) String() string                            { return parquet.Zstd.String() }
func (c *shardCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *shardCodec) Encode(dst, src []byte) ([]byte, error) {
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
			return nil, fmt.Errorf("creating the zstd encoder of the shard writer: %w", err)
		}
		c.enc = enc
	}
	return c.enc.EncodeAll(src, dst[:0]), nil
}

func (c *shardCodec) Decode(dst, src []byte) ([]byte, error) { return parquet.Zstd.Decode(dst, src) }

package corpus

import (
	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/schema"
)

// recordV2 is the record of spec version 2: the record without its grounded
// column. Shards of that layout are read (their records have Grounded nil)
// but never written.
type recordV2 struct {
	ID         string            `parquet:"id"`
	Source     string            `parquet:"source"`
	Split      string            `parquet:"split"`
	Problem    string            `parquet:"problem"`
	Answer     string            `parquet:"answer"`
	Reference  *string           `parquet:"reference,optional"`
	Style      string            `parquet:"style"`
	Rubric     []schema.Item     `parquet:"rubric,list"`
	Rollouts   []schema.Rollout  `parquet:"rollouts,list"`
	NCorrect   int32             `parquet:"n_correct"`
	PassRate   float64           `parquet:"pass_rate"`
	Provenance schema.Provenance `parquet:"provenance"`
	Usage      schema.Usage      `parquet:"usage"`
}

// readableSchemas are the record layouts a shard may have, newest first:
// the current one, then spec 2's.
func readableSchemas() []*parquet.Schema {
	return []*parquet.Schema{recordSchema(), parquet.SchemaOf(new(recordV2))}
}

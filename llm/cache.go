package llm

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var responsesBucket = []byte("responses")

// Cache is a persistent map from CacheKey to raw response bytes, kept in
// one bbolt file. Writes from concurrent callers are grouped into shared
// transactions (db.Batch), each synced to disk before Put returns, so a
// crash loses nothing that Put reported stored. It is safe for
// concurrent use; one process at a time may open a file.
type Cache struct {
	db   *bolt.DB
	path string
}

// OpenCache opens or creates the cache file at path. It fails after about
// a second, with an error saying so, if another process holds the file.
func OpenCache(path string) (*Cache, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("opening response cache %s: the file is locked by another process (is another run using it?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening response cache %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(responsesBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialising response cache %s: %w", path, err)
	}
	return &Cache{db: db, path: path}, nil
}

// Get returns a copy of the value stored under key.
func (c *Cache) Get(key string) ([]byte, bool, error) {
	var out []byte
	err := c.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(responsesBucket).Get([]byte(key)); v != nil {
			out = append(make([]byte, 0, len(v)), v...)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading response cache %s: %w", c.path, err)
	}
	return out, out != nil, nil
}

// Put stores raw under key, replacing any earlier value. raw must not be
// modified until Put returns.
func (c *Cache) Put(key string, raw []byte) error {
	if raw == nil {
		raw = []byte{}
	}
	err := c.db.Batch(func(tx *bolt.Tx) error {
		return tx.Bucket(responsesBucket).Put([]byte(key), raw)
	})
	if err != nil {
		return fmt.Errorf("writing response cache %s: %w", c.path, err)
	}
	return nil
}

// Len returns the number of stored responses.
func (c *Cache) Len() (int, error) {
	var n int
	err := c.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(responsesBucket).Stats().KeyN
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting response cache %s: %w", c.path, err)
	}
	return n, nil
}

// Close closes the file.
func (c *Cache) Close() error {
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("closing response cache %s: %w", c.path, err)
	}
	return nil
}

package results

import (
	"fmt"
	"io"
	"os"
	"time"
)

// The model list cache: the provider's model list (prices, windows) as the catalog last
// fetched it, so that a new server has prices at once and offline. One file, replaced
// atomically; its modification time is when it was fetched. Its name cannot be taken for
// a record's or a worker's file.
const (
	modelsFile     = "models.json"
	maxModelsBytes = 40 << 20
)

// ReadModels returns the cached model list and when it was written; an error wrapping
// fs.ErrNotExist when there is none. It is opened like every file of the store.
func (s *Store) ReadModels() ([]byte, time.Time, error) {
	root, err := s.openDir(false)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer root.Close()
	f, fi, err := openIn(root, modelsFile, os.O_RDONLY, 0)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("results: the model list cache: %w", err)
	}
	defer f.Close()
	if fi.Size() > maxModelsBytes {
		return nil, time.Time{}, fmt.Errorf("results: the model list cache %s is %d bytes, more than consult writes", modelsFile, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxModelsBytes))
	return data, fi.ModTime(), err
}

// WriteModels replaces the cached model list, written now.
func (s *Store) WriteModels(data []byte) error {
	if len(data) > maxModelsBytes {
		return fmt.Errorf("results: a model list of %d bytes is more than the cache keeps", len(data))
	}
	root, err := s.openDir(true)
	if err != nil {
		return err
	}
	defer root.Close()
	return writeAtomic(root, modelsFile, tempPrefix+"models-", tempSuffix, data, time.Now())
}

package renderer

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"sync"

	"github.com/cairn-dev/cairn/planner/plan"
	"github.com/cairn-dev/cairn/planner/spec"
)

// Cache remembers what a Renderer rendered, so that a pass of the loop
// renders and builds only the clusters whose spec or plan changed since
// the passes before. Render is pure: a tree is a function of the cluster's
// spec, its plan, the step selected and the renderer's options, so the
// cache is keyed by a digest of exactly those (the options are the
// renderer's own, fixed for the cache's life).
//
// An entry is not trusted blindly: it keeps a checksum of its files and
// builds, verified on every hit, and an entry that fails it (memory a bug
// wrote over) is dropped and rendered again. Hits hand out copies of the
// tree's map, so a caller that edits one cannot change what the next hit
// returns.
//
// Memory stays bounded: entries live for two generations. A loop starts
// one with each pass (NewPass), so what a pass rendered stays for the
// next and an entry unused for a whole pass is dropped; a generation that
// reaches the cache's limit starts the next one too.
type Cache struct {
	r     *Renderer
	limit int
	// disk, when set, is the second level (DiskCache).
	disk *DiskCache

	mu        sync.Mutex
	cur, prev map[[sha256.Size]byte]*cached
	stats     CacheStats
}

// CacheStats count what the cache did since it was made.
type CacheStats struct {
	// Hits were answered from memory, DiskHits from the DiskCache;
	// Misses rendered; Rebuilt entries failed their checksum in memory
	// and were rendered again; DiskErrors are entries the DiskCache
	// could not write (a render never fails for them).
	Hits, DiskHits, Misses, Rebuilt, DiskErrors int
}

type cached struct {
	tree  Tree
	built Built
	sum   uint32
}

// DefaultCacheLimit is a generation's most entries when NewCache is given
// 0: above the clusters a repo may hold (spec.RepoLimits), so a pass over
// the largest fleet never drops what it just rendered.
const DefaultCacheLimit = 8192

// NewCache returns a cache over r whose generations hold limit entries
// (DefaultCacheLimit when limit <= 0).
func NewCache(r *Renderer, limit int) *Cache {
	if limit <= 0 {
		limit = DefaultCacheLimit
	}
	return &Cache{r: r, limit: limit, cur: map[[sha256.Size]byte]*cached{}, prev: map[[sha256.Size]byte]*cached{}}
}

// WithDisk makes d the cache's second level: a render not in memory is
// read from d when it is there, and what is rendered is written to d too.
// d must have been opened for the cache's renderer.
func (c *Cache) WithDisk(d *DiskCache) *Cache {
	c.disk = d
	return c
}

// Render is Renderer.Render, answered from the cache when the same
// cluster spec, plan and step were rendered before. Errors are not kept.
func (c *Cache) Render(cl spec.Cluster, p plan.Plan, step string) (Tree, Built, error) {
	key, err := cacheKey(cl, p, step)
	if err != nil {
		return c.r.Render(cl, p, step)
	}
	if e := c.lookup(key); e != nil {
		return maps.Clone(e.tree), e.built, nil
	}
	if c.disk != nil {
		if t, b, ok := c.disk.get(key); ok {
			c.count(func(s *CacheStats) { s.DiskHits++ })
			c.store(key, &cached{tree: maps.Clone(t), built: b, sum: checksum(t, b)})
			return t, b, nil
		}
	}
	c.count(func(s *CacheStats) { s.Misses++ })
	t, b, err := c.r.Render(cl, p, step)
	if err != nil {
		return nil, Built{}, err
	}
	c.store(key, &cached{tree: maps.Clone(t), built: b, sum: checksum(t, b)})
	if c.disk != nil {
		if err := c.disk.put(key, t, b); err != nil {
			c.count(func(s *CacheStats) { s.DiskErrors++ })
		}
	}
	return t, b, nil
}

func (c *Cache) count(f func(*CacheStats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.stats)
}

// NewPass starts a generation: what the pass before used stays one more,
// the rest is dropped.
func (c *Cache) NewPass() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prev, c.cur = c.cur, make(map[[sha256.Size]byte]*cached, len(c.cur))
}

// Stats returns what the cache did so far.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Cache) lookup(key [sha256.Size]byte) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cur[key]
	if !ok {
		if e, ok = c.prev[key]; ok {
			delete(c.prev, key)
			c.put(key, e)
		}
	}
	if !ok {
		return nil
	}
	if checksum(e.tree, e.built) != e.sum {
		delete(c.cur, key)
		c.stats.Rebuilt++
		return nil
	}
	c.stats.Hits++
	return e
}

func (c *Cache) store(key [sha256.Size]byte, e *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(key, e)
}

// put adds e to the current generation, starting a new one when it is
// full.
func (c *Cache) put(key [sha256.Size]byte, e *cached) {
	if len(c.cur) >= c.limit {
		c.prev, c.cur = c.cur, make(map[[sha256.Size]byte]*cached, c.limit)
	}
	c.cur[key] = e
}

// cacheKey digests what a render depends on besides the renderer: the
// spec's kind and every field of it, the whole plan, and the step.
func cacheKey(cl spec.Cluster, p plan.Plan, step string) ([sha256.Size]byte, error) {
	specJSON, err := json.Marshal(cl)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	planJSON, err := json.Marshal(p)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	h := sha256.New()
	ref := cl.Ref()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00", ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, len(specJSON))
	h.Write(specJSON)
	fmt.Fprintf(h, "\x00%d\x00", len(planJSON))
	h.Write(planJSON)
	fmt.Fprintf(h, "\x00%d\x00%s", len(step), step)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum covers an entry's paths, files and builds.
func checksum(t Tree, b Built) uint32 {
	sum := uint32(0)
	for _, p := range slices.Sorted(maps.Keys(t)) {
		sum = crc32.Update(sum, castagnoli, []byte(p))
		sum = crc32.Update(sum, castagnoli, []byte{0})
		sum = crc32.Update(sum, castagnoli, t[p])
		sum = crc32.Update(sum, castagnoli, []byte{0})
	}
	sum = crc32.Update(sum, castagnoli, b.Base)
	sum = crc32.Update(sum, castagnoli, []byte{0})
	return crc32.Update(sum, castagnoli, b.Selected)
}

//go:build linux

package powercut

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrNoFUSE means this host cannot mount a FUSE filesystem: no
// /dev/fuse, or no permission to mount (not root, no fusermount).
var ErrNoFUSE = errors.New("FUSE unavailable")

// Mount is a Disk served at a directory.
type Mount struct {
	dir    string
	server *fuse.Server
}

// Mount serves d at dir, an existing empty directory, until Unmount.
// Without the kernel's write-back cache and with no attribute caching,
// every write and size change reaches d as it happens.
func (d *Disk) Mount(dir string) (*Mount, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoFUSE, err)
	}
	zero := time.Duration(0)
	opts := &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			FsName: "powercut", Name: "powercut",
			// As root, mount(2) directly: no fusermount needed.
			DirectMount:   os.Geteuid() == 0,
			DisableXAttrs: true,
		},
	}
	server, err := fs.Mount(dir, &root{disk: d}, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: mount %s: %v", ErrNoFUSE, dir, err)
	}
	return &Mount{dir: dir, server: server}, nil
}

// Unmount unmounts the directory; every file on it must be closed.
func (m *Mount) Unmount() error {
	var err error
	// A process just killed may still be letting go of its files.
	for range 50 {
		if err = m.server.Unmount(); err == nil {
			m.server.Wait()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("unmount %s: %w", m.dir, err)
}

// root is the mount's only directory.
type root struct {
	fs.Inode
	disk *Disk
}

var (
	_ fs.NodeLookuper  = (*root)(nil)
	_ fs.NodeCreater   = (*root)(nil)
	_ fs.NodeUnlinker  = (*root)(nil)
	_ fs.NodeRenamer   = (*root)(nil)
	_ fs.NodeReaddirer = (*root)(nil)
	_ fs.NodeStatfser  = (*root)(nil)
	_ fs.NodeGetattrer = (*root)(nil)
)

func (r *root) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o755
	return 0
}

func (r *root) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	r.disk.statfs(out)
	return 0
}

// statfs reports the disk's size and what its files leave free.
func (d *Disk) statfs(out *fuse.StatfsOut) {
	d.mu.Lock()
	defer d.mu.Unlock()
	const bsize = 4096
	out.Bsize, out.Frsize, out.NameLen = bsize, bsize, 255
	out.Blocks = uint64(d.size / bsize)
	free := uint64(max(0, d.size-d.used()) / bsize)
	out.Bfree, out.Bavail = free, free
	out.Files, out.Ffree = 1<<20, 1<<20-uint64(len(d.files))
}

func (r *root) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d := r.disk
	d.mu.Lock()
	f, ok := d.files[name]
	d.mu.Unlock()
	if !ok {
		return nil, syscall.ENOENT
	}
	return r.child(ctx, name, f, out), 0
}

func (r *root) child(ctx context.Context, name string, f *file, out *fuse.EntryOut) *fs.Inode {
	n := &node{disk: r.disk, f: f}
	n.attr(&out.Attr)
	return r.NewInode(ctx, n, fs.StableAttr{Mode: syscall.S_IFREG, Ino: f.ino})
}

func (r *root) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	d := r.disk
	d.mu.Lock()
	f, ok := d.files[name]
	if !ok {
		f = &file{ino: d.nextIno, mode: mode & 0o7777}
		d.nextIno++
		d.files[name] = f
	} else if flags&syscall.O_EXCL != 0 {
		d.mu.Unlock()
		return nil, nil, 0, syscall.EEXIST
	}
	if flags&syscall.O_TRUNC != 0 {
		f.resize(0)
	}
	d.mu.Unlock()
	return r.child(ctx, name, f, out), nil, 0, 0
}

func (r *root) Unlink(_ context.Context, name string) syscall.Errno {
	d := r.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.files[name]; !ok {
		return syscall.ENOENT
	}
	delete(d.files, name)
	return 0
}

func (r *root) Rename(_ context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if newParent.EmbeddedInode() != r.EmbeddedInode() || flags&^uint32(1) != 0 { // RENAME_NOREPLACE only
		return syscall.ENOTSUP
	}
	d := r.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[name]
	if !ok {
		return syscall.ENOENT
	}
	if _, exists := d.files[newName]; exists && flags&1 != 0 {
		return syscall.EEXIST
	}
	delete(d.files, name)
	d.files[newName] = f
	return 0
}

func (r *root) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	d := r.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	var entries []fuse.DirEntry
	for name, f := range d.files {
		entries = append(entries, fuse.DirEntry{Name: name, Ino: f.ino, Mode: syscall.S_IFREG})
	}
	return fs.NewListDirStream(entries), 0
}

// node is one regular file; the file handle is unused, every call names
// the node.
type node struct {
	fs.Inode
	disk *Disk
	f    *file
}

var (
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeReader    = (*node)(nil)
	_ fs.NodeWriter    = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.NodeFlusher   = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeAllocater = (*node)(nil)
	_ fs.NodeStatfser  = (*node)(nil)
)

// Statfs answers statfs(2) of the file's path as of the filesystem's.
func (n *node) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	n.disk.statfs(out)
	return 0
}

// attr fills out; d.mu must not be held.
func (n *node) attr(out *fuse.Attr) {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	n.attrLocked(out)
}

func (n *node) attrLocked(out *fuse.Attr) {
	out.Mode = syscall.S_IFREG | n.f.mode
	out.Ino = n.f.ino
	out.Size = uint64(len(n.f.data))
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 4096
	out.Nlink = 1
}

func (n *node) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		n.disk.mu.Lock()
		n.f.resize(0)
		n.disk.mu.Unlock()
	}
	return nil, 0, 0
}

func (n *node) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.attr(&out.Attr)
	return 0
}

func (n *node) Setattr(_ context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	if size, ok := in.GetSize(); ok {
		n.f.resize(int(size))
	}
	if mode, ok := in.GetMode(); ok {
		n.f.mode = mode & 0o7777
	}
	n.attrLocked(&out.Attr)
	return 0
}

func (n *node) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	if off >= int64(len(n.f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	k := copy(dest, n.f.data[off:])
	return fuse.ReadResultData(dest[:k]), 0
}

func (n *node) Write(_ context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	if end := int(off) + len(data); end > len(n.f.data) {
		n.f.resize(end)
	}
	copy(n.f.data[off:], data)
	return uint32(len(data)), 0
}

// Fsync serves fsync and fdatasync alike: the file's data as written so
// far is what a Cut keeps.
func (n *node) Fsync(_ context.Context, _ fs.FileHandle, _ uint32) syscall.Errno {
	n.disk.mu.Lock()
	defer n.disk.mu.Unlock()
	n.f.synced = append(n.f.synced[:0], n.f.data...)
	n.disk.syncs++
	return 0
}

func (n *node) Flush(context.Context, fs.FileHandle) syscall.Errno { return 0 }

// Allocate serves fallocate's default mode (extend) and KEEP_SIZE (a
// no-op here: nothing is reserved in memory).
func (n *node) Allocate(_ context.Context, _ fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	const keepSize = 1 // FALLOC_FL_KEEP_SIZE
	switch mode {
	case 0:
		n.disk.mu.Lock()
		defer n.disk.mu.Unlock()
		if end := int(off + size); end > len(n.f.data) {
			n.f.resize(end)
		}
		return 0
	case keepSize:
		return 0
	}
	return syscall.EOPNOTSUPP
}

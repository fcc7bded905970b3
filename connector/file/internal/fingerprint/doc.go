// Package fingerprint identifies a file's content by its first bytes.
//
// Device and inode numbers alone cannot tell a truncated-and-rewritten
// file, or a new file that reused a freed inode, from the file that was
// there before; the first bytes can. A fingerprint grows with the file up
// to a configured size and is matched by prefix: a file still matches its
// old fingerprint when it has grown, and stops matching when the bytes the
// fingerprint covers changed or disappeared.
//
// Positions store only the length and a 64-bit FNV-1a hash of the
// fingerprint, so the saved state stays small however large it is; a
// Print in memory keeps the same and nothing more, so tracking many files
// does not cost a copy of each one's first bytes.
package fingerprint

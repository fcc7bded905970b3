package file

// fileID is what the operating system says a file is, whatever its name:
// device and inode on unix, volume serial number and file index on
// Windows. Both fit the same two numbers, which a position saves as "dev"
// and "ino", so the state layout is one on every system.
type fileID struct{ dev, ino uint64 }

// unixFileID is the identity of a file from its stat: device and inode.
func unixFileID(dev, ino uint64) fileID { return fileID{dev: dev, ino: ino} }

// windowsFileID is the identity of a file from GetFileInformationByHandle:
// the serial number of its volume and its 64-bit file index, which that
// call returns as two 32-bit halves. The index is unique within a volume
// and kept across renames, as an inode is.
func windowsFileID(volumeSerial, indexHigh, indexLow uint32) fileID {
	return fileID{dev: uint64(volumeSerial), ino: uint64(indexHigh)<<32 | uint64(indexLow)}
}

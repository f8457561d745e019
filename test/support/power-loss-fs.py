"""A FUSE file system that loses what was not synced, as a disk does when the power goes.

    power-loss-fs.py BACKING_DIR MOUNTPOINT

Every file under MOUNTPOINT is the file of the same name under BACKING_DIR, except that writes
and truncations are kept in this process's memory until the file is fsync'ed (or fdatasync'ed):
only then do they reach BACKING_DIR, and the backing file is fsync'ed in turn. Reads see the
writes (as a page cache would). Kill this process with SIGKILL and unmount, and every write that
was not synced is gone; mount again over the same BACKING_DIR and what is left is exactly what a
machine would find after a power loss. Names (create, unlink, rename, mkdir) reach BACKING_DIR
at once: SQLite syncs its folder where it must, and the store's promise is about data.

Locks are left to the kernel (no lock operation), which keeps them among the processes of this
machine as a local file system does. Single-threaded: requests are handled one at a time.
Prints "ready" on stdout once mounted. Written on mfusepy (libfuse 3 through ctypes).
"""

import errno
import os
import sys

import mfusepy as fuse

PAGE = 4096


class PowerLossFs(fuse.Operations):
    use_ns = True

    def __init__(self, root):
        self.root = root
        # path -> (content as seen by readers, indexes of pages changed since the last sync)
        self.unsynced = {}

    def _backing(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def _image(self, path):
        """The file's content with its unsynced changes, loaded from the backing file on first change."""
        entry = self.unsynced.get(path)
        if entry is None:
            with open(self._backing(path), "rb") as f:
                entry = (bytearray(f.read()), set())
            self.unsynced[path] = entry
        return entry

    def init(self, path):
        print("ready", flush=True)

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._backing(path))
        except FileNotFoundError:
            raise fuse.FuseOSError(errno.ENOENT)
        attrs = {
            key: getattr(st, key)
            for key in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime", "st_mtime", "st_ctime")
        }
        for key in ("st_atime", "st_mtime", "st_ctime"):
            attrs[key] = getattr(st, key + "_ns")
        entry = self.unsynced.get(path)
        if entry is not None:
            attrs["st_size"] = len(entry[0])
        return attrs

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._backing(path))

    def access(self, path, amode):
        if not os.access(self._backing(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def statfs(self, path):
        sv = os.statvfs(self._backing(path))
        return {
            key: getattr(sv, key)
            for key in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")
        }

    def mkdir(self, path, mode):
        os.mkdir(self._backing(path), mode)
        return 0

    def rmdir(self, path):
        os.rmdir(self._backing(path))
        return 0

    def chmod(self, path, mode):
        os.chmod(self._backing(path), mode)
        return 0

    def chown(self, path, uid, gid):
        os.chown(self._backing(path), uid, gid)
        return 0

    def utimens(self, path, times=None):
        os.utime(self._backing(path), ns=times) if times else os.utime(self._backing(path))
        return 0

    def unlink(self, path):
        os.unlink(self._backing(path))
        self.unsynced.pop(path, None)
        return 0

    def rename(self, old, new):
        os.rename(self._backing(old), self._backing(new))
        entry = self.unsynced.pop(old, None)
        self.unsynced.pop(new, None)
        if entry is not None:
            self.unsynced[new] = entry
        return 0

    def create(self, path, mode, fi=None):
        fd = os.open(self._backing(path), os.O_WRONLY | os.O_CREAT, mode)
        os.close(fd)
        return 0

    def open(self, path, flags):
        if not os.path.exists(self._backing(path)):
            raise fuse.FuseOSError(errno.ENOENT)
        return 0

    def read(self, path, size, offset, fh):
        entry = self.unsynced.get(path)
        if entry is not None:
            return bytes(entry[0][offset : offset + size])
        with open(self._backing(path), "rb") as f:
            f.seek(offset)
            return f.read(size)

    def write(self, path, data, offset, fh):
        content, dirty = self._image(path)
        end = offset + len(data)
        if end > len(content):
            content.extend(b"\0" * (end - len(content)))
        content[offset:end] = data
        dirty.update(range(offset // PAGE, (end - 1) // PAGE + 1))
        return len(data)

    def truncate(self, path, length, fh=None):
        content, dirty = self._image(path)
        if length < len(content):
            del content[length:]
        else:
            content.extend(b"\0" * (length - len(content)))
        dirty.add(length // PAGE)
        return 0

    def fsync(self, path, datasync, fh):
        entry = self.unsynced.pop(path, None)
        if entry is None:
            return 0
        content, dirty = entry
        with open(self._backing(path), "r+b") as f:
            f.truncate(len(content))
            for page in sorted(dirty):
                f.seek(page * PAGE)
                f.write(content[page * PAGE : (page + 1) * PAGE])
            f.flush()
            os.fsync(f.fileno())
        return 0

    # close() is not a sync: what was not fsync'ed stays in memory only.
    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0


if __name__ == "__main__":
    backing, mountpoint = sys.argv[1], sys.argv[2]
    fuse.FUSE(PowerLossFs(os.path.abspath(backing)), mountpoint, foreground=True, nothreads=True)

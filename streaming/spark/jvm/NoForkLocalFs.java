// routewatch's Hadoop file system for checkpoints on a local disk (see streaming/local_fs.py).
//
// Hadoop's RawLocalFileSystem, without Hadoop's native library (pip's PySpark has none), runs a
// child process to set a file's permissions (chmod) and to read whether a path is a symbolic
// link (readlink, on every rename). Spark's checkpoint manager creates and renames five to seven
// files per micro-batch, on the batch's critical path: about 25 child processes, 130 ms of a
// small batch. This does both through java.nio instead, in the JVM. No .crc side files, as with
// Hadoop's RawLocalFs.
package routewatch.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;

/** The file: scheme for Hadoop's FileContext (fs.AbstractFileSystem.file.impl). */
public class NoForkLocalFs extends DelegateToFileSystem {
  public NoForkLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(uri, new NoForkFileSystem(), conf, "file", false);
  }

  @Override
  public int getUriDefaultPort() {
    return -1;
  }

  @Override
  public FsServerDefaults getServerDefaults(Path f) throws IOException {
    return LocalConfigKeys.getServerDefaults();
  }

  @Override
  @Deprecated
  public FsServerDefaults getServerDefaults() throws IOException {
    return LocalConfigKeys.getServerDefaults();
  }

  @Override
  public boolean isValidName(String src) {
    return true;
  }

  /** Hadoop's raw local file system, with permissions and link status read in the JVM. */
  static final class NoForkFileSystem extends RawLocalFileSystem {
    // the nine permission bits, lowest first (the sticky bit has no java.nio form; Spark's
    // checkpoints do not use it)
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      short mode = permission.toShort();
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      for (int i = 0; i < BITS.length; i++) {
        if ((mode & (1 << i)) != 0) {
          set.add(BITS[i]);
        }
      }
      Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
    }

    @Override
    public FileStatus getFileLinkStatus(Path f) throws IOException {
      if (Files.isSymbolicLink(pathToFile(f).toPath())) {
        return super.getFileLinkStatus(f); // (Hadoop's own way, for the rare link)
      }
      return getFileStatus(f);
    }
  }
}

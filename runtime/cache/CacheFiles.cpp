//===- CacheFiles.cpp - File helpers of the kernel cache ------------------===//

#include "runtime/cache/CacheFiles.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fusec::cache {

std::string readFile(const std::string &path, bool *ok) {
  std::ifstream in(path, std::ios::binary);
  if (ok)
    *ok = static_cast<bool>(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool readAll(int fd, std::string &bytes) {
  bytes.clear();
  char buffer[1 << 16];
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      return true;
    bytes.append(buffer, n);
    offset += n;
  }
}

bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= n;
  }
  return true;
}

bool writeFile(const std::string &path, const std::string &bytes,
               bool durable) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  bool ok = writeAll(fd, bytes.data(), bytes.size()) &&
            (!durable || fdatasync(fd) == 0);
  return close(fd) == 0 && ok;
}

bool fileSize(const std::string &path, uint64_t &size) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return false;
  size = info.st_size;
  return true;
}

void makeDirectories(const std::string &path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error("fusec: cannot create cache directory '" + partial +
                  "': " + std::strerror(errno));
  }
}

std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *handle = opendir(dir.c_str())) {
    while (dirent *entry = readdir(handle))
      if (std::strcmp(entry->d_name, ".") != 0 &&
          std::strcmp(entry->d_name, "..") != 0)
        names.push_back(entry->d_name);
    closedir(handle);
  }
  return names;
}

void removeTree(const std::string &path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0)
    return;
  if (S_ISDIR(info.st_mode)) {
    for (const std::string &name : listDirectory(path))
      removeTree(path + "/" + name);
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace fusec::cache

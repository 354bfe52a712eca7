//===- Package.cpp - Compiled models in one file --------------------------===//

#include "runtime/Package.h"

#include "runtime/SymbolicExecutable.h"

#include "runtime/cache/Hash.h"
#include "runtime/cache/HostCompiler.h"
#include "runtime/core/ByteStream.h"
#include "runtime/core/ProgramBinary.h"
#include "runtime/core/Trace.h"
#include "runtime/cuda/CudaApi.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace fusec {

namespace {

constexpr char kMagic[8] = {'F', 'U', 'S', 'E', 'C', 'P', 'K', 'G'};
constexpr size_t kHeaderBytes = 64;
constexpr size_t kTableEntryBytes = 32;
/// Every section starts at a multiple of this: weights can be mapped and
/// read with aligned vector loads.
constexpr size_t kSectionAlignment = 64;

enum class SectionKind : uint32_t {
  Program = 1, ///< encodeProgram's bytes
  Kernels = 2, ///< the kernel table and run options (ExecutableImage)
  Code = 3,    ///< unit `index`'s shared object or cubin
  Ptx = 4,     ///< unit `index`'s PTX (CUDA; absent where there is none)
  Constant = 5 ///< buffer `index`'s bytes
};

const char *sectionName(SectionKind kind) {
  switch (kind) {
  case SectionKind::Program:
    return "program";
  case SectionKind::Kernels:
    return "kernel table";
  case SectionKind::Code:
    return "kernel code";
  case SectionKind::Ptx:
    return "PTX";
  case SectionKind::Constant:
    return "constant";
  }
  return "unknown";
}

struct Section {
  SectionKind kind;
  uint32_t index = 0;
  std::string_view bytes;
  uint64_t offset = 0;
  uint64_t checksum = 0;
};

/// Each section's FNV-1a hash. FNV-1a reads about 0.8 GB/s on one core; a
/// model's weights are many sections, so large packages hash them on up
/// to one thread per core.
std::vector<uint64_t> sectionHashes(const std::vector<Section> &sections) {
  std::vector<uint64_t> hashes(sections.size());
  uint64_t total = 0;
  for (const Section &section : sections)
    total += section.bytes.size();
  std::atomic<size_t> next{0};
  auto hashSections = [&] {
    for (size_t i; (i = next.fetch_add(1)) < sections.size();)
      hashes[i] = hashBytes(sections[i].bytes);
  };
  // Below a few MB a thread costs more than it saves.
  size_t threads = total < (8u << 20)
                       ? 1
                       : std::clamp<size_t>(std::thread::hardware_concurrency(),
                                            1, sections.size());
  std::vector<std::thread> helpers;
  try {
    for (size_t t = 1; t < threads; ++t)
      helpers.emplace_back(hashSections);
  } catch (const std::system_error &) {
    // No thread to spare: this one hashes the rest.
  }
  hashSections();
  for (std::thread &helper : helpers)
    helper.join();
  return hashes;
}

/// The header's version fields: this fusec's major, minor and patch.
struct Version {
  uint32_t major = FUSEC_PACKAGE_VERSION_MAJOR;
  uint32_t minor = FUSEC_PACKAGE_VERSION_MINOR;
  uint32_t patch = FUSEC_PACKAGE_VERSION_PATCH;
  std::string text() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch);
  }
  bool operator==(const Version &other) const {
    return major == other.major && minor == other.minor && patch == other.patch;
  }
};

/// The header and table checksum covers the header with its checksum
/// field (bytes 40-47) zeroed, then the table.
constexpr size_t kChecksumOffset = 40;
uint64_t headerChecksum(std::string_view headerAndTable) {
  std::string copy(headerAndTable);
  std::memset(copy.data() + kChecksumOffset, 0, 8);
  return hashBytes(copy);
}

std::string encodeKernels(const ExecutableImage &image) {
  ByteWriter out;
  out.put<uint64_t>(image.code.size());
  std::vector<uint64_t> unitOf(image.unitOf.begin(), image.unitOf.end());
  out.putList(unitOf);
  out.putStrings(image.functionOf);
  out.putString(image.arch);
  out.putString(image.ptxArch);
  out.putString(image.cpuFlags);
  out.put<uint8_t>(image.tf32);
  out.put<uint8_t>(image.cudaGraph);
  out.put<uint8_t>(image.kernelOverlap);
  out.put<int64_t>(image.zeroCopyMaxBytes);
  return std::move(out.data());
}

/// The kernel table into `image`; returns the number of units.
uint64_t decodeKernels(std::string_view bytes, const std::string &what,
                       ExecutableImage &image) {
  ByteReader in(bytes, what);
  uint64_t units = in.get<uint64_t>();
  for (uint64_t unit : in.getList<uint64_t>()) {
    if (unit >= units)
      in.fail("a kernel names unit " + std::to_string(unit) + " of " +
              std::to_string(units));
    image.unitOf.push_back(unit);
  }
  image.functionOf = in.getStrings();
  if (image.functionOf.size() != image.unitOf.size())
    in.fail("the kernel table's lists differ in length");
  image.arch = in.getString();
  image.ptxArch = in.getString();
  image.cpuFlags = in.getString();
  image.tf32 = in.getBool();
  image.cudaGraph = in.getBool();
  image.kernelOverlap = in.getBool();
  image.zeroCopyMaxBytes = in.get<int64_t>();
  if (in.remaining() != 0)
    in.fail(std::to_string(in.remaining()) + " bytes after the kernel table");
  return units;
}

[[noreturn]] void fail(const std::string &path, const std::string &why) {
  throw Error(path + ": error: " + why);
}

/// The words of a /proc/cpuinfo "flags" line, without its label.
std::set<std::string> flagSet(const std::string &line) {
  std::istringstream words(line.substr(std::min(line.find(':'), line.size())));
  std::set<std::string> flags;
  for (std::string word; words >> word;)
    if (word != ":")
      flags.insert(word);
  return flags;
}

/// An open file's bytes, mapped read-only; unmapped when destroyed.
class MappedFile {
public:
  explicit MappedFile(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      fail(path,
           std::string("cannot open the package: ") + std::strerror(errno));
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      close(fd);
      fail(path, "not a regular file");
    }
    size = static_cast<size_t>(info.st_size);
    if (size > 0) {
      address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (address == MAP_FAILED) {
        int error = errno;
        close(fd);
        fail(path,
             std::string("cannot map the package: ") + std::strerror(error));
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (size > 0)
      munmap(address, size);
  }
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  std::string_view bytes() const {
    return {static_cast<const char *>(address), size};
  }

private:
  void *address = nullptr;
  size_t size = 0;
};

} // namespace

const char *packageFusecVersion() {
  static const std::string version = Version().text();
  return version.c_str();
}

bool isPackagePath(const std::string &path) {
  return path.size() > 6 && path.compare(path.size() - 6, 6, ".fusec") == 0;
}

void savePackage(const Program &program, const ExecutableImage &image,
                 const std::string &path) {
  trace::Scope scope("save package " + path, "package");
  std::string programBytes = encodeProgram(program);
  std::string kernelBytes = encodeKernels(image);
  std::vector<Section> sections = {{SectionKind::Program, 0, programBytes},
                                   {SectionKind::Kernels, 0, kernelBytes}};
  for (size_t u = 0; u < image.code.size(); ++u)
    sections.push_back({SectionKind::Code, uint32_t(u), *image.code[u]});
  for (size_t u = 0; u < image.ptx.size(); ++u)
    if (!image.ptx[u].empty())
      sections.push_back({SectionKind::Ptx, uint32_t(u), image.ptx[u]});
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    const BufferDesc &buffer = program.buffers[id];
    if (buffer.role == BufferRole::Constant)
      sections.push_back({SectionKind::Constant,
                          uint32_t(id),
                          {reinterpret_cast<const char *>(buffer.data.data()),
                           buffer.data.size()}});
  }
  auto alignUp = [](uint64_t offset) {
    return (offset + kSectionAlignment - 1) / kSectionAlignment *
           kSectionAlignment;
  };
  uint64_t end = alignUp(kHeaderBytes + sections.size() * kTableEntryBytes);
  for (Section &section : sections) {
    section.offset = end;
    end = alignUp(end + section.bytes.size());
  }

  ByteWriter head;
  head.data().append(kMagic, sizeof kMagic);
  head.put<uint32_t>(kPackageFormatVersion);
  Version version;
  head.put<uint32_t>(version.major);
  head.put<uint32_t>(version.minor);
  head.put<uint32_t>(version.patch);
  head.put<uint32_t>(static_cast<uint32_t>(program.target));
  head.put<uint32_t>(sections.size());
  head.put<uint64_t>(end);
  head.put<uint64_t>(0); // the checksum, below
  head.align(kHeaderBytes);
  std::vector<uint64_t> hashes = sectionHashes(sections);
  for (size_t i = 0; i < sections.size(); ++i) {
    head.put<uint32_t>(static_cast<uint32_t>(sections[i].kind));
    head.put<uint32_t>(sections[i].index);
    head.put<uint64_t>(sections[i].offset);
    head.put<uint64_t>(sections[i].bytes.size());
    head.put<uint64_t>(hashes[i]);
  }
  uint64_t checksum = headerChecksum(head.data());
  std::memcpy(head.data().data() + kChecksumOffset, &checksum, 8);
  head.align(kSectionAlignment);

  std::string temp = path + ".tmp." + std::to_string(getpid());
  FILE *out = std::fopen(temp.c_str(), "wb");
  if (!out)
    fail(path,
         std::string("cannot write the package: ") + std::strerror(errno));
  static const char zeros[kSectionAlignment] = {};
  bool written = std::fwrite(head.data().data(), 1, head.data().size(), out) ==
                 head.data().size();
  uint64_t at = head.data().size();
  for (const Section &section : sections) {
    written &=
        std::fwrite(zeros, 1, section.offset - at, out) == section.offset - at;
    written &= std::fwrite(section.bytes.data(), 1, section.bytes.size(),
                           out) == section.bytes.size();
    at = section.offset + section.bytes.size();
  }
  written &= std::fwrite(zeros, 1, end - at, out) == end - at;
  int error = errno;
  written &= std::fclose(out) == 0;
  if (!written || std::rename(temp.c_str(), path.c_str()) != 0) {
    error = written ? errno : error;
    std::remove(temp.c_str());
    fail(path,
         std::string("cannot write the package: ") + std::strerror(error));
  }
}

PackageContents parsePackage(std::string_view bytes, const std::string &path,
                             bool verifyChecksums) {
  if (bytes.size() < kHeaderBytes)
    fail(path, "truncated: " + std::to_string(bytes.size()) +
                   " bytes, less than a package header (" +
                   std::to_string(kHeaderBytes) + ")");
  if (bytes.substr(0, sizeof kMagic) != std::string_view(kMagic, 8))
    fail(path, "not a fusec package (no FUSECPKG magic)");
  ByteReader header(bytes.substr(sizeof kMagic, kHeaderBytes - sizeof kMagic),
                    path + ": error: the header");
  uint32_t format = header.get<uint32_t>();
  if (format != kPackageFormatVersion)
    fail(path, "package format version " + std::to_string(format) +
                   "; this fusec reads version " +
                   std::to_string(kPackageFormatVersion));
  Version written;
  written.major = header.get<uint32_t>();
  written.minor = header.get<uint32_t>();
  written.patch = header.get<uint32_t>();
  if (!(written == Version()))
    fail(path, "written by fusec " + written.text() + "; this is fusec " +
                   Version().text() + " (compile the model again)");
  uint32_t target = header.get<uint32_t>();
  uint32_t sectionCount = header.get<uint32_t>();
  uint64_t fileSize = header.get<uint64_t>();
  uint64_t checksum = header.get<uint64_t>();
  if (fileSize != bytes.size())
    fail(path, fileSize > bytes.size()
                   ? "truncated: " + std::to_string(bytes.size()) + " of " +
                         std::to_string(fileSize) + " bytes"
                   : std::to_string(bytes.size() - fileSize) +
                         " bytes after the package's end");
  if (target > static_cast<uint32_t>(Target::Cuda))
    fail(path, "unknown target " + std::to_string(target));
  if (sectionCount > (bytes.size() - kHeaderBytes) / kTableEntryBytes)
    fail(path, "corrupt: its section table runs past the end");
  std::string_view headerAndTable =
      bytes.substr(0, kHeaderBytes + sectionCount * kTableEntryBytes);
  if (verifyChecksums && headerChecksum(headerAndTable) != checksum)
    fail(path, "corrupt: the checksum of its header and section table does "
               "not match");

  ByteReader table(headerAndTable.substr(kHeaderBytes),
                   path + ": error: the section table");
  std::vector<Section> sections(sectionCount);
  for (Section &section : sections) {
    uint32_t kind = table.get<uint32_t>();
    section.index = table.get<uint32_t>();
    section.offset = table.get<uint64_t>();
    uint64_t size = table.get<uint64_t>();
    section.checksum = table.get<uint64_t>();
    if (kind < 1 || kind > static_cast<uint32_t>(SectionKind::Constant))
      fail(path, "corrupt: unknown section kind " + std::to_string(kind));
    section.kind = static_cast<SectionKind>(kind);
    std::string name = std::string(sectionName(section.kind)) + " section " +
                       std::to_string(section.index);
    if (section.offset % kSectionAlignment != 0 ||
        section.offset < headerAndTable.size() ||
        section.offset > bytes.size() || size > bytes.size() - section.offset)
      fail(path, "corrupt: the " + name + " lies outside the file");
    section.bytes = bytes.substr(section.offset, size);
  }
  if (verifyChecksums) {
    std::vector<uint64_t> hashes = sectionHashes(sections);
    for (size_t i = 0; i < sections.size(); ++i)
      if (hashes[i] != sections[i].checksum)
        fail(path, std::string("corrupt: the ") +
                       sectionName(sections[i].kind) + " section " +
                       std::to_string(sections[i].index) +
                       " does not match its checksum");
  }

  // Sections may not overlap, and what lies between them is zero: every
  // byte of the file is then checked.
  std::vector<const Section *> byOffset;
  for (const Section &section : sections)
    byOffset.push_back(&section);
  std::sort(
      byOffset.begin(), byOffset.end(),
      [](const Section *a, const Section *b) { return a->offset < b->offset; });
  size_t covered = headerAndTable.size();
  auto checkPadding = [&](size_t end) {
    size_t nonZero = bytes.substr(covered, end - covered)
                         .find_first_not_of(std::string_view("\0", 1));
    if (nonZero != std::string_view::npos)
      fail(path, "corrupt: byte " + std::to_string(covered + nonZero) +
                     " lies between sections but is not zero");
  };
  for (const Section *section : byOffset) {
    if (section->offset < covered)
      fail(path, "corrupt: its sections overlap");
    checkPadding(section->offset);
    covered = section->offset + section->bytes.size();
  }
  checkPadding(bytes.size());

  auto only = [&](SectionKind kind) {
    const Section *found = nullptr;
    for (const Section &section : sections)
      if (section.kind == kind) {
        if (found)
          fail(path,
               std::string("corrupt: two ") + sectionName(kind) + " sections");
        found = &section;
      }
    if (!found)
      fail(path, std::string("corrupt: no ") + sectionName(kind) + " section");
    return found->bytes;
  };
  PackageContents contents;
  contents.program =
      decodeProgram(only(SectionKind::Program), path + ": error: the program");
  Program &program = contents.program;
  if (static_cast<uint32_t>(program.target) != target)
    fail(path, "corrupt: the header and the program name different targets");
  contents.image = std::make_shared<ExecutableImage>();
  ExecutableImage &image = *contents.image;
  image.origin = path;
  uint64_t units = decodeKernels(only(SectionKind::Kernels),
                                 path + ": error: the kernel table", image);
  if (image.unitOf.size() != program.kernels.size())
    fail(path, "corrupt: the kernel table lists " +
                   std::to_string(image.unitOf.size()) +
                   " kernels, the program " +
                   std::to_string(program.kernels.size()));
  if (units > sections.size())
    fail(path, "corrupt: " + std::to_string(units) + " kernel units but " +
                   std::to_string(sections.size()) + " sections");
  image.code.resize(units);
  image.ptx.resize(target == static_cast<uint32_t>(Target::Cuda) ? units : 0);
  std::vector<bool> filled(program.buffers.size(), false);
  for (const Section &section : sections) {
    std::string name = std::string(sectionName(section.kind)) + " section " +
                       std::to_string(section.index);
    switch (section.kind) {
    case SectionKind::Program:
    case SectionKind::Kernels:
      break;
    case SectionKind::Code:
      if (section.index >= units || image.code[section.index])
        fail(path, "corrupt: a stray " + name);
      image.code[section.index] =
          std::make_shared<const std::string>(section.bytes);
      break;
    case SectionKind::Ptx:
      if (section.index >= image.ptx.size() ||
          !image.ptx[section.index].empty() || section.bytes.empty())
        fail(path, "corrupt: a stray " + name);
      image.ptx[section.index] = std::string(section.bytes);
      break;
    case SectionKind::Constant: {
      if (section.index >= program.buffers.size() || filled[section.index])
        fail(path, "corrupt: a stray " + name);
      BufferDesc &buffer = program.buffers[section.index];
      if (buffer.role != BufferRole::Constant ||
          static_cast<int64_t>(section.bytes.size()) != buffer.byteSize())
        fail(path, "corrupt: the " + name + " does not fit constant '" +
                       buffer.name + "'");
      buffer.data.assign(section.bytes.begin(), section.bytes.end());
      filled[section.index] = true;
      break;
    }
    }
  }
  for (uint64_t u = 0; u < units; ++u)
    if (!image.code[u])
      fail(path, "corrupt: no code for kernel unit " + std::to_string(u));
  for (size_t id = 0; id < program.buffers.size(); ++id)
    if (program.buffers[id].role == BufferRole::Constant && !filled[id])
      fail(path,
           "corrupt: no bytes for constant '" + program.buffers[id].name + "'");
  return contents;
}

PackageContents readPackage(const std::string &path) {
  trace::Scope scope("read package " + path, "load");
  MappedFile file(path);
  return parsePackage(file.bytes(), path);
}

std::shared_ptr<Executable> loadPackage(const std::string &path) {
  PackageContents contents = readPackage(path);
  Program &program = contents.program;
  const ExecutableImage &image = *contents.image;
  if (program.target == Target::Cuda) {
    std::string unavailable = cuda::unavailableReason();
    if (!unavailable.empty())
      fail(path, "the package is compiled for CUDA (" + image.arch +
                     "), which cannot run here: " + unavailable);
  } else if (!image.code.empty()) {
    std::set<std::string> here = flagSet(cache::cpuFlags());
    std::string missing;
    for (const std::string &flag : flagSet(image.cpuFlags))
      if (!here.count(flag))
        missing += " " + flag;
    if (!missing.empty())
      fail(path, "the package's kernels are compiled for a CPU with "
                 "features this one lacks:" +
                     missing + " (compile the model on this machine)");
  }
  trace::Scope scope("load package " + path, "load", {{"model", program.name}});
  if (!program.isSymbolic())
    return makeExecutable(std::move(program), std::move(contents.image));
  // Each size runs an instance of the program over the package's kernels,
  // which read the sizes; the one at the minima is made now, as a compile
  // makes it (compiler/Compiler.cpp: load).
  std::vector<int64_t> minima;
  for (const DimSymbol &symbol : program.symbols)
    minima.push_back(symbol.min);
  std::shared_ptr<const ExecutableImage> kernels = std::move(contents.image);
  auto executable = std::make_shared<SymbolicExecutable>(
      std::move(program), [kernels](Program instance) {
        return makeExecutable(std::move(instance), kernels);
      });
  executable->instanceFor(minima);
  return executable;
}

} // namespace fusec

// Every error code kernels throws, and every code the native addon raises (they reach users only
// through kernels), with what it means. Packages above re-throw these codes too; each package has
// one such list, and tools/repo-checks fails on a code that is in none or that nothing throws.
import { NinodesError, type CodedError } from './errors.js';

export const KERNELS_ERROR_CODES = {
  // Arguments and shapes (any op, any package above that checks its inputs the same way).
  INVALID_ARGUMENT: 'an argument has the wrong type or is out of its range',
  INVALID_SHAPE: 'a shape is not a list of non-negative integers, or is too large to compute with',
  SHAPE_MISMATCH: 'the shapes or lengths of two inputs (or of an input and what was expected) disagree',
  DTYPE_MISMATCH: 'a tensor or typed array has a dtype the operation does not take',
  UNKNOWN_DTYPE: 'a dtype name that ninodes does not define',
  GROUP_MISMATCH: 'a dimension is not a multiple of the group size (Hadamard rotation, convrot)',
  INDEX_OUT_OF_RANGE: 'a row or element range lies outside the tensor or file it indexes',
  TENSOR_OUT_OF_BOUNDS: "a tensor's bytes (dtype × shape at its offset) do not fit in its buffer",
  TENSOR_DISPOSED: 'a tensor was used after dispose()',
  TENSOR_NOT_ON_HOST: "a tensor's bytes were read on the JS thread (.data, .bytes(), .buffer) while they live in a device buffer",
  MISALIGNED_STORAGE: "a typed view was asked at a byte offset that is not a multiple of the element's size",
  BLOCK_MISALIGNED: "a block-quantized (GGUF) tensor's last dimension is not a whole number of blocks",
  BLOCK_LENGTH_MISMATCH: 'the bytes of a block-quantized tensor do not encode the number of values asked for',
  BLOCK_DTYPE_NO_ELEMENTS: 'an element view was asked of a block-quantized tensor (decode it first)',
  // The native addon and the CPU.
  ADDON_MISSING: 'the native addon ninodes.node is not installed for this platform',
  ADDON_LOAD_FAILED: 'the native addon exists but the dynamic loader refused it (missing library, wrong CPU)',
  BACKEND_UNAVAILABLE: 'the chosen compute backend (int8 backend, bf16 units) cannot run on this CPU or these sizes',
  SIMD_UNAVAILABLE: 'setSimd was asked for a SIMD path (scalar, avx2, avx512) this CPU does not have',
  // The compute-device seam (backend/): devices, backends, the ops they run.
  DEVICE_NOT_REGISTERED: 'an op or a copy named a compute device that no backend registered',
  DEVICE_ALREADY_REGISTERED: 'a compute device was registered under a name another device already has',
  DEVICE_MISMATCH: "an op's tensors live on different compute devices (copy them to one first)",
  OP_UNSUPPORTED: 'the backend that owns the operands does not run this op on these dtypes or shapes',
  OUT_OF_MEMORY: 'an allocation failed: not enough memory for this model or size',
  // Weight encoders (GGUF blocks, fp8, int8) that quant's converters call.
  UNSUPPORTED_QUANTIZE_TARGET: 'a weight format that the quantizer cannot write',
  NON_FINITE_WEIGHT: 'a weight holds NaN or infinity and cannot be scaled',
  INTERNAL: 'a bug in ninodes (an unexpected state or native exception); please report it',
  // Mapped files.
  MMAP_EMPTY: 'an empty file (0 bytes) cannot be mapped',
  MMAP_FAILED: 'the OS refused to map a file (mmap or fstat failed)',
  MMAP_RANGE: 'a byte range asked of a mapped file lies outside it (or the file is empty)',
  MMAP_TOO_MANY: 'too many files are mapped at once',
  MMAP_VIEW_FAILED: 'Node refused an external buffer over mapped memory',
  MMAP_VIEW_TOO_LARGE: 'a view of a mapped file is larger than one ArrayBuffer may be',
  MADVISE_FAILED: 'the OS refused a read-ahead or release hint (madvise) on a mapped file',
  FADVISE_FAILED: 'the OS refused a page-cache hint (posix_fadvise) on an open file',
  FILE_TRUNCATED: 'a file is shorter than its header says, or shrank while mapped or read',
  FILE_MODIFIED: 'a file was written to after it was mapped',
  FILE_REPLACED: 'a mapped file was deleted or replaced by another file at its path',
  FILE_CLOSED: 'a file or checkpoint was used after it was closed',
  LOCK_TIMEOUT: 'a lock file stayed held by another live process past the timeout',
  LOCK_INVALID: 'a lock file is not one ninodes wrote (a link, a FIFO, a device, or text that names no owner)',
  SIDE_FILE_TOO_LARGE: 'a small side file (a lock, a checksum, a config) is far larger than such a file can be',
  // File-system errors a user can cause (fs-errors.ts maps each errno to one of these).
  FILE_NOT_FOUND: 'no file or directory at a path (ENOENT)',
  PATH_IS_DIRECTORY: 'a directory stands where a file is needed',
  PATH_NOT_DIRECTORY: 'a file stands where a directory is needed',
  NOT_A_REGULAR_FILE: 'a path names a FIFO, socket or device, not a regular file',
  PERMISSION_DENIED: 'the OS refused access to a path (EACCES, EPERM)',
  READ_ONLY_FILESYSTEM: 'a write went to a read-only file system',
  NO_SPACE: 'the disk or the quota is full',
  FILE_TOO_LARGE: 'a file grew past what its file system allows',
  CROSS_DEVICE: 'a rename crossed file systems',
  PATH_EXISTS: 'something already exists at a path that must be new',
  SYMLINK_REFUSED: 'a symbolic link stands where ninodes writes a file of its own',
  PATH_TOO_LONG: 'a path is longer than the OS allows',
  TOO_MANY_OPEN_FILES: 'the open-file limit is reached',
  PATH_BUSY: 'a path is a mount point or in use (EBUSY, ETXTBSY)',
  DIRECTORY_NOT_EMPTY: 'a directory that must be empty holds files',
  IO_ERROR: 'the disk or network file system failed (EIO)',
  FS_ERROR: 'a file-system error with no code of its own (the message carries the errno)',
  // Collectives (Gloo), raised by the native communicator.
  COMM_TIMEOUT: 'ranks did not take part in a collective or the rendezvous before the deadline',
  COMM_PEER_LOST: 'a rank died or closed its connection during a collective',
  COMM_MISMATCH: 'ranks issued different collectives (another model, shape or world size): every rank must issue the same collectives in the same order',
  COMM_STORE: 'the rendezvous store (a directory or a Redis server) is unusable',
  COMM_INTERFACE: 'the network interface or address given for the transport does not exist here',
  COMM_CLOSED: 'a communicator was used after close()',
  COMM_NOT_CONNECTED: 'a communicator was used before it connected',
  // Vulkan devices (native/src/vulkan).
  VULKAN_UNAVAILABLE: 'no Vulkan loader or driver is usable in this process, or the device lacks a compute queue',
  VULKAN_DEVICE_NOT_FOUND: 'a Vulkan device index (vk:N) that this machine does not have',
  VULKAN_OUT_OF_MEMORY: 'a Vulkan allocation failed: device (or host) memory is exhausted, or a buffer exceeds the largest allocation',
  VULKAN_ERROR: 'a Vulkan call failed (the message names the call and its VkResult)',
  VULKAN_BUFFER_FREED: 'a Vulkan buffer was used after it was freed',
} as const;

export type KernelsErrorCode = keyof typeof KERNELS_ERROR_CODES;

/** NinodesError for the codes of kernels. */
export const KernelsError: CodedError<KernelsErrorCode> = NinodesError;

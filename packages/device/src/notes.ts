/**
 * What a probe noticed while looking at the machine. `debug` is the normal absence of something
 * (no NVIDIA driver on an AMD box); `warn` means the machine looked broken or unreadable and some
 * fields are unknown because of it.
 */
export interface ProbeNote {
  level: 'debug' | 'warn';
  /** Which probe: `cpu`, `cgroup`, `amd-sysfs`, `nvml`, `hip`, ... */
  source: string;
  message: string;
  /** The file or call the note is about. */
  where?: string;
}

export class NoteLog {
  readonly notes: ProbeNote[] = [];
  debug(source: string, message: string, where?: string): void {
    this.notes.push(where === undefined ? { level: 'debug', source, message } : { level: 'debug', source, message, where });
  }
  warn(source: string, message: string, where?: string): void {
    this.notes.push(where === undefined ? { level: 'warn', source, message } : { level: 'warn', source, message, where });
  }
}

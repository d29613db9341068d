/** Loads the compiled addon; throws an error with code NATIVE_NOT_BUILT when it is missing. */
export declare function load(): Record<string, unknown>;
/** Absolute path of build/Release/ninodes.node. */
export declare const bindingPath: string;

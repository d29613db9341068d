/* volk's function-pointer table and loader (libvulkan-volk-dev ships it as a source file). It opens
   libvulkan.so.1 with dlopen on first use, so the addon has no link-time dependency on Vulkan. */
#include <volk.c>

// Logging goes through spdlog; components log with these macros so the sink is chosen in main().
#pragma once

#include <spdlog/spdlog.h>

#define YB_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define YB_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define YB_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define YB_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)

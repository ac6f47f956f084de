// The translation unit that builds the Asio/Beast precompiled header (asio_pch.h).

// The part of Apple's Foundation that src/backends/metal/*.mm calls,
// declared with the same names and selector shapes, so that the host code
// passes `clang++ -fsyntax-only -x objective-c++ -fobjc-arc` on Linux
// (tests/metal/tests.cmake). A project-owned stand-in: it declares,
// it implements nothing, and it is never linked.
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef unsigned long NSUInteger;
typedef long NSInteger;
typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil ((id)0)

@protocol NSObject
@end

@protocol NSCopying
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
@end

@interface NSString : NSObject <NSCopying>
+ (instancetype)stringWithUTF8String:(const char*)string;
@property(readonly) const char* UTF8String;
@end

@interface NSNumber : NSObject <NSCopying>
+ (NSNumber*)numberWithInt:(int)value;
+ (NSNumber*)numberWithUnsignedLong:(unsigned long)value;
@end

@interface NSDictionary<KeyType, ObjectType> : NSObject
+ (instancetype)dictionaryWithObjects:(const ObjectType[])objects
                              forKeys:(const KeyType[])keys
                                count:(NSUInteger)count;
@end

@interface NSError : NSObject
@property(readonly, copy) NSString* localizedDescription;
@end
